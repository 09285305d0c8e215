#!/bin/bash
# SchedMD's slurm-smd packages of the release the slurm_packages_build role pins, built for real through
# playbooks/slurm_build_packages.yml on a Debian 13 container (the simulated node image, <repo>-node:trixie) from the
# vendored tarball (../shared/vendor, copied into .build/vendor), cached by content hash under .build/smd/<hash>/:
# run again, that run must change nothing; a check-mode run with another option must build nothing; a run with a wrong
# checksum must fail with the role's one message and leave the packages as they were. The first half of scripts/test.sh's
# smd stage.
#   bash scripts/lib/smd_build.sh            # prints the package directory on its last line
# Needs podman, the node image (scripts/cluster.sh images) and the venv (scripts/test.sh deps). Report:
# .build/smd/<hash>/report.txt (times of the runs, changed counts, whether gpu_nvml.so is in slurm-smd).
set -euo pipefail
GPUCLUSTER_SIM_LIB=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# shellcheck source=scripts/lib/common.sh
. "$GPUCLUSTER_SIM_LIB/common.sh"
# shellcheck source=scripts/lib/vendor.sh
. "$GPUCLUSTER_SIM_LIB/vendor.sh"
ROOT=$GPUCLUSTER_SIM_ROOT
PODMAN=$ROOT/scripts/lib/podman
VENV=$ROOT/.venv
IMAGE=${GPUCLUSTER_SIM_IMAGE_REPO}-node:trixie
LABEL=io.gpucluster.sim=smd-build
NETWORK=gpucluster-smd-build
HOST=gcsim-smd-build
JOBS=${GPUCLUSTER_SMD_JOBS:-2}

# the release and checksum the role pins (its defaults), not a second pin here
read -r URL SHA256 < <("$VENV/bin/python" - "$ROOT/roles/slurm_packages_build/defaults/main.yml" <<'EOF'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
print(d['slurm_packages_build_tarball'], d['slurm_packages_build_sha256'])
EOF
)
TARBALL_NAME=${URL##*/}
# the local mirror's copy (checked against its SHA256SUMS), else SchedMD's download, into .build/vendor (never git)
mkdir -p "$ROOT/.build/vendor"
TARBALL=$ROOT/.build/vendor/$TARBALL_NAME
if [ ! -f "$TARBALL" ]; then
    mirrored=$(vendor_file "$TARBALL_NAME")
    if [ -n "$mirrored" ]; then
        cp "$mirrored" "$TARBALL.part" && mv "$TARBALL.part" "$TARBALL"
    else
        vendor_download "$URL" "$TARBALL"
    fi
fi
echo "$SHA256  $TARBALL" | sha256sum -c --quiet - || die "$TARBALL is not the tarball the role pins (sha256 $SHA256)"

"$PODMAN" image exists "$IMAGE" || die "no node image $IMAGE: bash scripts/cluster.sh images"
IMAGE_ID=$("$PODMAN" image inspect --format '{{.Id}}' "$IMAGE")
# what the .debs are made of: the tarball, the image the build runs on, the build script and the stamp's format (the
# role's stamp decides the rest: a stamp that differs rebuilds in the same directory)
HASH=$(content_hash "sha256=$SHA256" "image=$IMAGE_ID" roles/slurm_packages_build/files/build-slurm-smd.sh \
    "stamp=$(grep '^STAMP_FORMAT' "$ROOT/plugins/module_utils/slurm/_slurm_build.py")")
OUT=$ROOT/.build/smd/$HASH
WORK=$ROOT/.build/smd/work
mkdir -p "$OUT" "$WORK"
REPORT=$OUT/report.txt

cleanup() {
    local ours
    ours=$("$PODMAN" ps -a -q --filter "label=$LABEL" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$ours" ] || "$PODMAN" rm -f -t 0 $ours >/dev/null 2>&1 || true
    "$PODMAN" network rm -f "$NETWORK" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
# a network of its own: its DNS answers (on podman's default network apt cannot resolve the mirror here)
"$PODMAN" network create --label "$LABEL" "$NETWORK" >/dev/null
"$PODMAN" run -d --name "$HOST" --hostname "$HOST" --label "$LABEL" --network "$NETWORK" \
    --entrypoint sleep "$IMAGE" infinity >/dev/null

cat >"$WORK/inventory.yml" <<EOF
---
slurm_build:
  hosts:
    $HOST:
  vars:
    ansible_connection: podman_pipelined
    ansible_podman_executable: $PODMAN
    ansible_user: root
    ansible_python_interpreter: /usr/bin/python3
    slurm_packages_build_tarball: $TARBALL
    slurm_packages_build_sha256: $SHA256
    slurm_packages_build_output_dir: $OUT
    slurm_packages_build_jobs: $JOBS
EOF

play() {
    local name=$1 start rc
    shift
    start=$(date +%s)
    set +e
    ANSIBLE_CONNECTION_PLUGINS=$ROOT/scripts/lib/connection_plugins ANSIBLE_COLLECTIONS_PATH=$ROOT/.build/collections \
        ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 PATH=$VENV/bin:$PATH \
        nice -n 10 "$VENV/bin/ansible-playbook" -i "$WORK/inventory.yml" "$ROOT/playbooks/slurm_build_packages.yml" "$@" \
        >"$WORK/$name.log" 2>&1
    rc=$?
    set -e
    echo "$name: rc=$rc $(( $(date +%s) - start ))s $(grep -E "^$HOST +:" "$WORK/$name.log" | tr -s ' ')" | tee -a "$REPORT"
    return $rc
}

: >"$REPORT"
if [ -f "$OUT/slurm-smd.stamp" ]; then
    log "packages of $HASH cached in $OUT: the playbook must find them up to date"
    play cached || die "the cached run failed: $WORK/cached.log"
else
    log "building the slurm-smd packages cold into $OUT (20-40 minutes on 2 cores; log $WORK/cold.log)"
    play cold || { tail -n 40 "$WORK/cold.log" >&2; die "the cold build failed: $WORK/cold.log"; }
    play cached || die "the second run failed: $WORK/cached.log"
fi
grep -q "^$HOST .*changed=0 .*failed=0" <(grep -E "^$HOST +:" "$WORK/cached.log" | tr -s ' ') \
    || die "the second run changed something or failed: $WORK/cached.log"
before=$(cd "$OUT" && sha256sum slurm-smd.stamp ./*.deb)
# check mode with another option (no NVML): it would build, and builds nothing
play check --check -e slurm_packages_build_nvml=false || die "the check-mode run failed: $WORK/check.log"
grep -q "check mode: would build Slurm" "$WORK/check.log" || die "the check-mode run did not say it would build: $WORK/check.log"
[ "$(cd "$OUT" && sha256sum slurm-smd.stamp ./*.deb)" = "$before" ] || die "the check-mode run changed $OUT"
# a tarball whose checksum is not the one given: one message, nothing built, the packages as they were
if play badsum -e slurm_packages_build_sha256=0000000000000000000000000000000000000000000000000000000000000000; then
    die "a run with a wrong checksum passed: $WORK/badsum.log"
fi
grep -q "slurm_packages_build_sha256 is 0000000000000000000000000000000000000000000000000000000000000000, but the tarball" \
    "$WORK/badsum.log" || die "a wrong checksum was not refused with the role's message: $WORK/badsum.log"
# (the play stops at the check on the controller: the tarball is neither copied nor built)
if grep -q "TASK .*Copy the tarball to the build host\|TASK .*Build (mk-build-deps" "$WORK/badsum.log"; then
    die "a run with a wrong checksum went on past the check: $WORK/badsum.log"
fi
[ "$(cd "$OUT" && sha256sum slurm-smd.stamp ./*.deb)" = "$before" ] || die "the run with a wrong checksum changed $OUT"
echo "wrong checksum: refused, $OUT unchanged" | tee -a "$REPORT"
# Slurm's NVML plugin inside slurm-smd, as the install path and AutoDetect=nvml need it
# (the listing read whole first: grep -q closing the pipe early fails dpkg-deb, and pipefail the test)
listing=$(dpkg -c "$OUT"/slurm-smd_*.deb)
if grep -q '/gpu_nvml\.so$' <<<"$listing"; then
    echo "gpu_nvml.so in $(basename "$OUT"/slurm-smd_*.deb): yes" | tee -a "$REPORT"
else
    echo "gpu_nvml.so in slurm-smd: NO" | tee -a "$REPORT"
    die "slurm-smd has no gpu_nvml.so"
fi
ls "$OUT" >>"$REPORT"
echo "$OUT"
