#!/usr/bin/env bash
# Ansible-side scale (issue #23 item 3, docs/scale.md): a no-op site.yml over
# many inventory hosts, per Ansible setting, in one run.
#
#   bash benchmarks/ansible_scale.sh                      # 16 and 64 GPU nodes
#   bash benchmarks/ansible_scale.sh 8,16 default,forks   # sizes, variants at the smallest
#   bash benchmarks/ansible_scale.sh 64 default --resume --converge-tags slurm
#
# Needs the simulated cluster up and converged (bash scripts/cluster.sh up;
# bash scripts/cluster.sh playbook playbooks/site.yml): its gpu-02 is cloned
# into gpu-03 ... gpu-N (benchmarks/ansible_scale.py says how). The clones
# stay up (the cluster's label: `bash scripts/cluster.sh down` removes them).
# One systemd per node: fs.inotify.max_user_instances must allow it (the
# script says the value). About 8 minutes per run over 16 GPU nodes and 30
# over 64 on 2 cores (the default: about 2 hours).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -x "$ROOT/.venv/bin/python" ] || { echo "ansible_scale: run 'bash scripts/test.sh deps' first (the virtualenv)" >&2; exit 2; }
printf 'host: %s CPUs, %s MiB memory; %s\n' "$(nproc)" "$(free -m | awk '/^Mem:/{print $2}')" "$(date -u +%Y-%m-%dT%H:%MZ)"
exec "$ROOT/.venv/bin/python" "$ROOT/benchmarks/ansible_scale.py" "$@"
