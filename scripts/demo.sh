#!/usr/bin/env bash
# The README's first command: bring up the built-in simulated GPU cluster,
# deploy it with site.yml and show it working through Slurm.
#
#   bash scripts/demo.sh          # also: make demo
#
# Runs as root on Debian 12 and installs what it needs (apt packages, the
# pinned .venv, podman, the node images - cached by content hash). The nodes
# run Debian 13 with Slurm 24.11; GPUCLUSTER_SIM_SUITE=bookworm gives Debian 12
# with Slurm 22.05 (docs/slurm-versions.md). The
# cluster stays up afterwards for you to explore:
#   podman exec -it gcsim-ctl sinfo        bash scripts/cluster.sh down
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/tooling.sh
. "$ROOT/scripts/lib/tooling.sh"

# podman with the project's settings (CONTAINERS_CONF), as scripts/cluster.sh uses it
pm() { "$ROOT/scripts/lib/podman" "$@"; }

step() { printf '\n=== %s\n' "$*"; }

step "tools: Debian packages and the pinned virtualenv"
ensure_apt_packages git rsync
ensure_venv
link_collection

step "simulated cluster: podman, node images, ctl + gpu-01 (8xH100) + gpu-02 (8xA100 40GB)"
bash scripts/cluster.sh deps images up

step "deploy: ansible-playbook gpucluster.bringup.site"
bash scripts/cluster.sh playbook playbooks/site.yml

step "the deployed cluster, as a user sees it"
pm exec gcsim-ctl sinfo -N -o '%N %P %t %G'
pm exec gcsim-ctl timeout 60 srun -N2 -w gpu-01,gpu-02 hostname
pm exec gcsim-ctl timeout 60 srun -w gpu-01 --gres=gpu:1g.10gb:1 printenv CUDA_VISIBLE_DEVICES
pm exec gcsim-ctl sacctmgr -n show assoc format=Account,User,QOS

step "validate: ansible-playbook gpucluster.bringup.validate (report in validation-report/)"
rc=0
bash scripts/cluster.sh playbook playbooks/validate.yml >"$ROOT/.build/demo-validate.log" 2>&1 || rc=$?
if [ -f validation-report/report.md ]; then
    cat validation-report/report.md
else
    tail -n 40 "$ROOT/.build/demo-validate.log"
fi
echo
echo "report: $ROOT/validation-report/ (report.md, report.html with the busbw plot, report.json, report.junit.xml)"
echo "the NCCL figures are recordings printed by the all_reduce_perf STAND-IN: there is no CUDA here"
echo "the cluster stays up: podman exec -it gcsim-ctl bash; remove it with: bash scripts/cluster.sh down"
if [ "$rc" -ne 0 ]; then
    echo "validation FAILED (log: .build/demo-validate.log)" >&2
    exit "$rc"
fi
