#!/usr/bin/env bash
# Cost of site.yml on the simulated cluster, per connection, in one run:
# the first run (bring-up from fresh nodes), the second run (nothing to do:
# changed=0), `--check --diff` on the converged cluster, the tasks each host
# ran (ok + skipped of the second run) and the ratio second/first.
#
#   bash benchmarks/site_times.sh                    # both connections
#   bash benchmarks/site_times.sh ssh                # one of them
#   bash benchmarks/site_times.sh ssh ssh-plain      # the effect of the recommended settings
#
# Connections: ssh (the simulated inventory's own: the login admin with sudo,
# pipelining, ControlPersist; inventory/simulated/group_vars/all/simulated.yml),
# ssh-plain (the same login without pipelining and without a kept
# connection: Ansible's behaviour when nothing is set but ControlMaster is
# off) and podman_pipelined (as root through podman exec -i, one per module;
# scripts/lib/connection_plugins/). Each connection gets a cluster started
# from nothing (`cluster.sh down up`); the cluster is left up.
# The logs go to .build/bench/site-<connection>-<run>.log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CLUSTER=(bash scripts/cluster.sh)
LOGS=$ROOT/.build/bench
mkdir -p "$LOGS"

connections=("$@")
[ ${#connections[@]} -gt 0 ] || connections=(ssh podman_pipelined)
# the ansible-playbook arguments that choose connection $1
connection_args() {
    case "$1" in
        ssh) ;;
        ssh-plain) printf '%s\n' -e '{"ansible_pipelining": false, "ansible_ssh_args": "-o ControlMaster=no"}' ;;
        podman_pipelined) printf '%s\n' -e ansible_connection=podman_pipelined -e ansible_user=root ;;
    esac
}
for c in "${connections[@]}"; do
    case "$c" in
        ssh | ssh-plain | podman_pipelined) ;;
        *) echo "unknown connection '$c'; valid: ssh, ssh-plain, podman_pipelined" >&2; exit 2 ;;
    esac
done

now() { date +%s%3N; }   # milliseconds
seconds() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# One site.yml run with connection $1, log $2, more ansible-playbook arguments after;
# prints its milliseconds, fails on a failed run.
run_site() {
    local connection=$1 log=$2 t rc=0 args=()
    shift 2
    mapfile -t args < <(connection_args "$connection")
    t=$(now)
    "${CLUSTER[@]}" playbook playbooks/site.yml "${args[@]}" "$@" >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || { echo "site.yml $* with $connection failed (rc $rc), see $log" >&2; exit 1; }
    echo $(($(now) - t))
}

# "host:changed=N tasks=N" of a run's recap (tasks: ok + skipped).
recap() {
    sed -n '/^PLAY RECAP/,$p' "$1" | awk '/ok=/ {
        host=$1; ok=0; sk=0; ch=0
        for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "ok") ok = kv[2]; if (kv[1] == "skipped") sk = kv[2]; if (kv[1] == "changed") ch = kv[2] }
        if (host != "localhost") printf "%s changed=%d tasks=%d; ", host, ch, ok + sk }'
}

rows=()
for c in "${connections[@]}"; do
    "${CLUSTER[@]}" down >/dev/null 2>&1 || true
    "${CLUSTER[@]}" up >/dev/null
    first=$(run_site "$c" "$LOGS/site-$c-first.log")
    second=$(run_site "$c" "$LOGS/site-$c-second.log")
    check=$(run_site "$c" "$LOGS/site-$c-check.log" --check --diff)
    ratio=$(awk -v a="$second" -v b="$first" 'BEGIN { printf "%.2f", a / b }')
    rows+=("$(printf '%-26s %8ss %8ss %8ss %6s   %s' "$c" "$(seconds "$first")" "$(seconds "$second")" "$(seconds "$check")" "$ratio" \
        "second: $(recap "$LOGS/site-$c-second.log")check: $(recap "$LOGS/site-$c-check.log" | sed 's/ tasks=[0-9]*//g')")")
done

printf '%-26s %9s %9s %9s %6s   %s\n' connection first second check s/f "per host (second run; --check --diff)"
printf '%s\n' "${rows[@]}"
