#!/usr/bin/env bash
# Prepare one node container of the simulated cluster, from the host:
#
#   bash scripts/lib/node-prepare.sh CONTAINER [GPU_PRESET]
#
# 1. wait until systemd in the container has booted;
# 2. refresh the apt lists (a real machine has them; the image has none) and
#    install the OpenSSH server, as every node of a real site has one (the
#    slurm role's pam_slurm_adopt option works on sshd's PAM stack);
# 3. with a GPU_PRESET (an `nvmlsim create --preset` name): install the NVML
#    simulator from nvml_sim/src as the node's `pynvml` and `nvmlsim`
#    packages, the /usr/local/bin/nvmlsim command and nvmlsim-boot.service,
#    the nvidia-smi STAND-IN (nvml_sim/bin/nvidia-smi) as /usr/local/bin/nvidia-smi,
#    create the simulated GPUs once and (re)create their device files and the
#    mig-minors table.
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
    local state i
    for i in $(seq 1 120); do
        state=$(in_node systemctl is-system-running 2>/dev/null || true)
        case "$state" in
            running | degraded) return 0 ;;
        esac
        [ "$i" -lt 120 ] || break
        sleep 0.5
    done
    die "$container: systemd did not finish booting within 60s (state: '${state:-unknown}')"
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
    if [ ! -f "$SIM_SRC/nvmlsim/__main__.py" ] || [ ! -f "$SIM_SRC/pynvml/__init__.py" ]; then
        die "the NVML simulator is missing: expected $SIM_SRC/nvmlsim/__main__.py and $SIM_SRC/pynvml/__init__.py"
    fi
    site=$(in_node python3 -c 'import sys; print("/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2])')
    in_node rm -rf "$site/pynvml" "$site/nvmlsim"
    in_node mkdir -p "$site"
    tar -C "$SIM_SRC" --exclude=__pycache__ --owner=0 --group=0 -cf - pynvml nvmlsim \
        | pm exec -i "$container" tar -C "$site" --no-same-owner -xf -
    tar -C "$GPUCLUSTER_SIM_LIB/nvmlsim-node" --owner=0 --group=0 -cf - . \
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
        in_node nvmlsim create --preset "$preset" --force >/dev/null \
            || die "$container: 'nvmlsim create --preset $preset' failed"
    fi
    in_node systemctl enable --quiet nvmlsim-boot.service
    in_node systemctl restart nvmlsim-boot.service \
        || die "$container: nvmlsim-boot.service failed: $(in_node journalctl -u nvmlsim-boot.service -n 20 --no-pager)"
}

# The all_reduce_perf STAND-IN (prints recorded real outputs, measures
# nothing) and its recordings, where the validation playbook of the simulated
# inventory looks for nccl-tests: /opt/nccl-tests-STANDIN/build.
install_nccl_standin() {
    in_node mkdir -p /opt/nccl-tests-STANDIN/build /opt/nccl-tests-STANDIN/fixtures
    # (Debian has no `python`: the node's python3 runs it)
    sed '1s|^#!.*|#!/usr/bin/python3|' "$GPUCLUSTER_SIM_ROOT/tests/standins/all_reduce_perf-standin" \
        | pm exec -i "$container" sh -c 'cat > /opt/nccl-tests-STANDIN/build/all_reduce_perf'
    tar -C "$GPUCLUSTER_SIM_ROOT/tests/unit/fixtures/nccl" --owner=0 --group=0 -cf - . \
        | pm exec -i "$container" tar -C /opt/nccl-tests-STANDIN/fixtures --no-same-owner -xf -
    in_node chmod 0755 /opt/nccl-tests-STANDIN/build/all_reduce_perf
}

install_sshd() {
    in_node sh -c 'command -v sshd >/dev/null' 2>/dev/null && return 0
    in_node env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null \
        || die "$container: installing openssh-server failed"
}

wait_for_systemd
apt_update
install_sshd
if [ -n "$preset" ]; then
    install_simulator
    install_nccl_standin
fi
log "$container: ready${preset:+ ($preset)}"
