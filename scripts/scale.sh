#!/usr/bin/env bash
# The emulated large cluster (issue #23, docs/scale.md): real Slurm 24.11
# (Debian 13) with one slurmctld container and R "rack" containers, each
# running one real slurmd per emulated GPU node (`slurmd -N <node>`), every
# node with its own address and simulated GPU devices. The configuration is
# made by the collection's own code (scripts/lib/scale_fleet.py).
#
#   bash scripts/scale.sh up 256 [RACKS]     # (re)create it with 256 nodes
#   bash scripts/scale.sh status
#   bash scripts/scale.sh ctl sinfo -s       # a command on the controller
#   bash scripts/scale.sh reconfigure        # scontrol reconfigure, timed
#   bash scripts/scale.sh down
#   GPUCLUSTER_SCALE_SET='--set MessageTimeout=30' bash scripts/scale.sh up 1024
#                                            # a slurm.conf key on top (as slurm_conf_overrides)
#
# Runs as root; podman with scripts/lib/containers.conf. Everything carries
# the label io.gpucluster.sim=scale; `down` removes exactly that. Prints one
# JSON line per measured step (benchmarks/scale.sh collects them).
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/common.sh"
# shellcheck source=scripts/lib/images.sh
. "$GPUCLUSTER_SIM_LIB/images.sh"

OWNER="$GPUCLUSTER_SIM_LABEL=scale"
SCALE_NETWORK=gcscale
SCALE_SUBNET=10.93.0.0/16
SCALE_CTL=gcscale-ctl
SCALE_CTL_ADDR=10.93.0.10
SCALE_OUT="$GPUCLUSTER_SIM_ROOT/.build/scale"
# The Debian 13 packages the scale image adds to the node image (the roles'
# own install is exercised by the default scenario; here the daemons at scale).
SCALE_PACKAGES="munge slurmctld slurmd slurm-client"

usage() {
    sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

measure() { # name value...: one JSON line
    local name=$1
    shift
    printf '{"step": "%s", %s}\n' "$name" "$*"
}

scale_image() {
    printf '%s-scale:%s\n' "$GPUCLUSTER_SIM_IMAGE_REPO" "$(content_hash "base=$(node_hash)" "packages=$SCALE_PACKAGES")"
}

ensure_scale_image() {
    local image node tmp
    [ "$GPUCLUSTER_SIM_SUITE" = trixie ] || die "the emulated cluster runs Debian 13 (Slurm 24.11): unset GPUCLUSTER_SIM_SUITE (is $GPUCLUSTER_SIM_SUITE)"
    image=$(scale_image)
    if pm image exists "$image"; then
        return 0
    fi
    ensure_images
    node=$(node_image)
    tmp=gcscale-build-$$
    log "building $image: $node + $SCALE_PACKAGES"
    pm rm -f "$tmp" >/dev/null 2>&1 || true
    pm run -d --name "$tmp" --network host --label "$OWNER" "$node" sleep infinity >/dev/null
    if ! pm exec "$tmp" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $SCALE_PACKAGES >/dev/null && systemctl disable munge slurmctld slurmd >/dev/null 2>&1; rm -rf /var/lib/apt/lists/*"; then
        pm rm -f "$tmp" >/dev/null
        die "installing $SCALE_PACKAGES in $tmp failed"
    fi
    pm commit --quiet --change 'CMD ["sleep", "infinity"]' "$tmp" "$image" >/dev/null
    pm rm -f -t 0 "$tmp" >/dev/null
}

our() { pm ps -a -q --filter "label=$OWNER"; }

cmd_down() {
    local ids=()
    mapfile -t ids < <(our)
    if [ ${#ids[@]} -gt 0 ]; then
        log "removing ${#ids[@]} container(s)"
        pm rm -f -t 0 "${ids[@]}" >/dev/null
    fi
    if pm network exists "$SCALE_NETWORK"; then
        pm network rm -f "$SCALE_NETWORK" >/dev/null
    fi
}

in_ctl() { pm exec "$SCALE_CTL" "$@"; }

racks() { pm ps -q --filter "label=$OWNER" --filter name=gcscale-rack- --format '{{.Names}}' | sort; }

# The script each container runs to start its daemons: munge, then slurmctld
# (controller) or the rack's slurmds, one per node with its own address.
rack_script() {
    cat <<'EOF'
set -eu
role=$1
mkdir -p /run/munge /run/slurmd /var/log/slurm /var/lib/slurm/slurmctld /var/spool/slurmd
chown munge: /etc/munge/munge.key /run/munge && chmod 400 /etc/munge/munge.key
chown slurm: /var/lib/slurm/slurmctld /var/log/slurm
cat /etc/slurm/hosts.scale >>/etc/hosts
su munge -s /bin/sh -c /usr/sbin/munged
if [ "$role" = ctl ]; then
    slurmctld -i
    exit 0
fi
# the devices gres.conf names (character devices, as the NVIDIA driver makes them)
while read -r file; do
    [ -e "$file" ] && continue
    mkdir -p "$(dirname "$file")"
    case "$file" in
        /dev/nvidia[0-9]*) mknod "$file" c 195 "${file#/dev/nvidia}" ;;
        *) mknod "$file" c 511 "${file##*nvidia-cap}" ;;
    esac
done </etc/slurm/devices.scale
while read -r node address; do
    ip addr add "$address/16" dev eth0
    mkdir -p "/var/spool/slurmd/$node"
done </etc/slurm/nodes.scale
# each slurmd in its own UTS namespace: its host name is its node's, which
# resolves to its own address (CommunicationParameters=NoInAddrAny binds it)
while read -r node _address; do
    unshare --uts sh -c "hostname $node && exec slurmd -N $node"
done </etc/slurm/nodes.scale
EOF
}

# TaskProlog (emulation only): the simulated GPUs of the job's node. A real
# node has one /var/lib/nvmlsim/state.json; a rack's nodes share a file system.
task_prolog() {
    cat <<'EOF'
#!/bin/sh
type=$(awk -v n="$SLURMD_NODENAME" '$1 == n { print $2 }' /etc/slurm/node-types.scale)
[ -n "$type" ] && echo "export NVMLSIM_STATE=/var/lib/nvmlsim/types/$type.json"
exit 0
EOF
}

cmd_up() {
    local nodes=${1:-} nracks=${2:-} image start t0 k name rack_nodes ready=0 idle waited
    if ! [[ "$nodes" =~ ^[0-9]+$ ]] || [ "$nodes" -lt 2 ]; then die "up needs a node count of 2 or more, got '${nodes}'"; fi
    [ -n "$nracks" ] || nracks=$(((nodes + 511) / 512))
    if ! [[ "$nracks" =~ ^[0-9]+$ ]] || [ "$nracks" -lt 1 ] || [ "$nracks" -gt "$nodes" ]; then die "racks '$nracks' must be 1 to $nodes"; fi
    command -v podman >/dev/null || die "podman is not installed: run 'bash scripts/cluster.sh deps' first"
    # every thread of every emulated slurmd, of its job steps and of the controller's sruns shares this host's
    # PID space: about 32 per node while a validation runs (measured: 1,024 nodes idle hold 6 per slurmd)
    local pid_max threads need
    pid_max=$(cat /proc/sys/kernel/pid_max)
    threads=$(ps -eLf --no-headers | wc -l)
    need=$((threads + nodes * 32))
    if [ "$need" -gt "$pid_max" ]; then
        die "$nodes emulated nodes need about $need threads on this host (32 a node, $threads running now) and kernel.pid_max is $pid_max: raise it (sysctl -w kernel.pid_max=4194304, systemd's default since v243) or emulate fewer nodes"
    fi
    ensure_scale_image
    image=$(scale_image)
    cmd_down
    rm -rf "$SCALE_OUT" && mkdir -p "$SCALE_OUT"
    t0=$(date +%s.%N)
    "$GPUCLUSTER_SIM_ROOT/.venv/bin/python" "$GPUCLUSTER_SIM_LIB/scale_fleet.py" --nodes "$nodes" --racks "$nracks" \
        --controller scale-ctl --controller-address "$SCALE_CTL_ADDR" --out "$SCALE_OUT" ${GPUCLUSTER_SCALE_SET:+$GPUCLUSTER_SCALE_SET} >/dev/null
    measure generate "\"nodes\": $nodes, \"racks\": $nracks, \"wall_s\": $(since "$t0"), \"detail\": $(cat "$SCALE_OUT/generation.json")"
    python3 - "$SCALE_OUT" <<'EOF'
import json, sys
out = sys.argv[1]
fleet = json.load(open(out + '/fleet.json'))
for rack in range(1, fleet['racks'] + 1):
    nodes = [n for n in fleet['nodes'] if n['rack'] == rack]
    with open('%s/nodes.rack-%d' % (out, rack), 'w') as handle:
        handle.write(''.join('%s %s\n' % (n['name'], n['address']) for n in nodes))
    files = sorted({f for n in nodes for f in fleet['types'][n['type']]['files']})
    with open('%s/devices.rack-%d' % (out, rack), 'w') as handle:
        handle.write(''.join(f + '\n' for f in files))
EOF
    rack_script >"$SCALE_OUT/start.sh"
    task_prolog >"$SCALE_OUT/scale-task-prolog"
    pm network create --label "$OWNER" --subnet "$SCALE_SUBNET" "$SCALE_NETWORK" >/dev/null
    # no PID limit: a slurmd has a few threads each and 1,024 of them share a rack (big_sys.shtml, TasksMax)
    # NET_ADMIN: the nodes' addresses on the rack's interface; SYS_ADMIN: a UTS namespace per slurmd
    local common=(--label "$OWNER" --network "$SCALE_NETWORK" --pids-limit -1 --cap-add NET_ADMIN --cap-add MKNOD --cap-add SYS_ADMIN)
    pm run -d --name "$SCALE_CTL" --hostname scale-ctl --ip "$SCALE_CTL_ADDR" "${common[@]}" "$image" >/dev/null
    for k in $(seq 1 "$nracks"); do
        pm run -d --name "gcscale-rack-$k" --hostname "rack-$k" --ip "10.93.0.$((10 + k))" "${common[@]}" "$image" >/dev/null
    done
    head -c 1024 /dev/urandom >"$SCALE_OUT/munge.key"
    for name in "$SCALE_CTL" $(racks); do
        pm cp "$SCALE_OUT/munge.key" "$name:/etc/munge/munge.key"
        for f in slurm.conf gres.conf start.sh; do pm cp "$SCALE_OUT/$f" "$name:/etc/slurm/${f/start.sh/start.scale}"; done
        pm cp "$SCALE_OUT/hosts" "$name:/etc/slurm/hosts.scale"
    done
    # the racks: the all_reduce_perf STAND-IN with its recordings (as node-prepare.sh installs it on a
    # simulated node), each node type's simulated GPUs, and the task prolog that points a job at them
    for name in $(racks); do
        install_nccl_standin "$name"
        pm exec "$name" mkdir -p /var/lib/nvmlsim/types
        tar -C "$SCALE_OUT/nvmlsim" --owner=0 --group=0 -cf - . | pm exec -i "$name" tar -C /var/lib/nvmlsim/types --no-same-owner -xf -
        pm cp "$SCALE_OUT/node-types" "$name:/etc/slurm/node-types.scale"
        pm cp "$SCALE_OUT/scale-task-prolog" "$name:/etc/slurm/scale-task-prolog"
        pm exec "$name" chmod 0755 /etc/slurm/scale-task-prolog
    done
    rm -f "$SCALE_OUT/munge.key"
    start=$(date +%s.%N)
    in_ctl bash /etc/slurm/start.scale ctl
    for k in $(seq 1 "$nracks"); do
        name=gcscale-rack-$k
        pm cp "$SCALE_OUT/nodes.rack-$k" "$name:/etc/slurm/nodes.scale"
        pm cp "$SCALE_OUT/devices.rack-$k" "$name:/etc/slurm/devices.scale"
        pm exec "$name" bash /etc/slurm/start.scale rack &
    done
    wait
    measure slurmd_started "\"nodes\": $nodes, \"wall_s\": $(since "$start")"
    # every node registered and idle (slurmctld accepted the configuration)
    waited=$((120 + nodes / 4))
    for _ in $(seq 1 "$waited"); do
        idle=$(in_ctl sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || true)
        if [ "$idle" -eq "$nodes" ]; then
            ready=1
            break
        fi
        sleep 1
    done
    [ "$ready" = 1 ] || { in_ctl sinfo -R >&2 || true; die "only $idle of $nodes nodes are idle after ${waited}s"; }
    measure all_idle "\"nodes\": $nodes, \"wall_s\": $(since "$start")"
    rack_nodes=$(pm exec gcscale-rack-1 pgrep -c -x slurmd)
    measure memory "\"nodes\": $nodes, \"slurmd_per_rack_1\": $rack_nodes, \"free_mb\": $(free -m | awk '/^Mem:/{print $7}')"
}

cmd_reconfigure() {
    local start nodes
    nodes=$(in_ctl sinfo -h -N -o '%N' | sort -u | wc -l)
    start=$(date +%s.%N)
    in_ctl scontrol reconfigure
    # reconfigure returns when slurmctld has read the files; then every node still responds
    while [ "$(in_ctl sinfo -h -N -t idle,alloc,mix -o '%N' | sort -u | wc -l)" -lt "$nodes" ]; do sleep 0.5; done
    measure reconfigure "\"nodes\": $nodes, \"wall_s\": $(since "$start")"
}

cmd_status() {
    pm ps -a --filter "label=$OWNER" --format '{{.Names}} {{.Status}}'
    if pm container exists "$SCALE_CTL"; then in_ctl sinfo -s || true; fi
}

[ $# -gt 0 ] || { usage; exit 2; }
cmd=$1
shift
case "$cmd" in
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    reconfigure) cmd_reconfigure ;;
    ctl) in_ctl "$@" ;;
    -h | --help | help) usage ;;
    *) printf "[cluster] error: unknown command '%s'; valid commands: up down status reconfigure ctl\n" "$cmd" >&2; exit 2 ;;
esac
