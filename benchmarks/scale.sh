#!/usr/bin/env bash
# The scale benchmark (issue #23, docs/scale.md): one run, one table.
#
#   bash benchmarks/scale.sh                  # N = 2, 64, 256, 1024
#   bash benchmarks/scale.sh 64,256           # other sizes
#
# For each N it brings up the emulated cluster (scripts/scale.sh: a real
# slurmctld and N real slurmds in rack containers), measures the collection's
# controller-side work on it (benchmarks/scale.py) and takes it down. Every
# measurement is also kept as JSON lines in .build/scale-bench.jsonl.
# Needs root, podman (bash scripts/cluster.sh deps) and the virtualenv
# (bash scripts/test.sh deps); 1,024 nodes need kernel.pid_max above 32,768
# (scripts/scale.sh says so). About 25 minutes on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -x "$ROOT/.venv/bin/python" ] || { echo "scale: run 'bash scripts/test.sh deps' first (the virtualenv)" >&2; exit 2; }
printf 'host: %s CPUs, %s MiB memory, kernel.pid_max %s; %s\n' "$(nproc)" "$(free -m | awk '/^Mem:/{print $2}')" \
    "$(cat /proc/sys/kernel/pid_max)" "$(date -u +%Y-%m-%dT%H:%MZ)"
exec "$ROOT/.venv/bin/python" "$ROOT/benchmarks/scale.py" --sizes "${1:-2,64,256,1024}" --json "$ROOT/.build/scale-bench.jsonl"
