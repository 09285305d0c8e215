#!/usr/bin/env bash
# nccl-tests on a real GPU machine (issue 47, item 3): build the pinned nccl-tests
# from its release archive, run all_reduce_perf on the GPUs the machine has, and
# check that the project's parser, gate and report read what the GPU machine
# printed. Everything it writes goes under $OUT (default .build/nccl-real):
#
#   versions.txt        GPU, driver, CUDA (driver and nvcc), NCCL, nccl-tests
#   allreduce.txt/.json -b 8 -e 8G -f 2 -c 1 -J: the validation's own run, text and -J report
#   iter.txt/.json      -b 1G -e 8G -f 2 -I 1 -S 1 -J: the 2.19 per-iteration columns and timestamps
#   check.json          the parser's reading of both (text vs JSON), the gate's records, the report
#   report.md           the validation report of those records (render_markdown)
#   build.log           the end of the build's output
#
#   bash scripts/gpu/nccl_real.sh            # on the GPU machine, from the repository root
#
# Needs: nvcc (PATH, $CUDA_HOME or /usr/local/cuda), NCCL (NCCL_HOME, else the
# nvidia-nccl-cu13/-cu12 wheel of the machine's python3, else /usr), make, a C++
# compiler, python3; the archive nccl-tests-<version>.tar.gz in $NCCL_TESTS_TARBALL,
# ../shared/vendor, shared/vendor or .build/vendor (nothing is downloaded; it is
# checked against the role's sha256 in roles/validate/vars/main.yml). Builds for
# the GPU present only (NVCC_GENCODE from its compute capability) with make -j.
# Reads the GPU with nvidia-smi --query-gpu and runs CUDA programs: it changes no
# GPU setting (no -pm, -mig, -r, -ac, -lgc...). About 2-4 minutes on one H100.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/.build/nccl-real}
WORK=${NCCL_REAL_WORK:-$ROOT/.build/nccl-real-work}
# (the version the validate role pins: validate_nccl_build's default)
VERSION=${NCCL_TESTS_VERSION:-$(python3 -c 'import runpy; print(runpy.run_path("plugins/module_utils/validation/_settings.py")["STAGE_DEFAULTS"]["validate_nccl_build"]["version"])')}
mkdir -p "$OUT" "$WORK"

step() { printf '\n=== %s\n' "$*"; }
die() { printf 'nccl_real.sh: %s\n' "$*" >&2; exit 1; }

step "GPU, driver, CUDA (read only)"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this is not a GPU machine"
GPU_LINES=$(nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,compute_cap --format=csv,noheader)
NGPUS=$(printf '%s\n' "$GPU_LINES" | grep -c .)
CAP=$(printf '%s\n' "$GPU_LINES" | head -n1 | awk -F', ' '{print $5}' | tr -d .)
DRIVER_CUDA=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n1)

NVCC=$(command -v nvcc || true)
for candidate in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    [ -n "$NVCC" ] || { [ -x "$candidate" ] && NVCC=$candidate; }
done
[ -n "$NVCC" ] || die "no nvcc (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin): cannot build nccl-tests"
CUDA_HOME=$(cd "$(dirname "$NVCC")/.." && pwd)
NVCC_VERSION=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')

step "NCCL"
if [ -z "${NCCL_HOME:-}" ]; then
    # the wheel of the machine's python3 (nvidia-nccl-cu13 or -cu12): include/nccl.h and lib/libnccl.so.2
    NCCL_HOME=$(python3 -c 'import importlib.util; s = importlib.util.find_spec("nvidia.nccl"); print(list(s.submodule_search_locations)[0] if s else "")' \
        2>/dev/null || true)
fi
if [ -z "${NCCL_HOME:-}" ] || [ ! -f "$NCCL_HOME/include/nccl.h" ]; then
    # another wheel layout: the directory above the first nccl.h in python3's site-packages
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true); do
        header=$(find "$site" -path '*nccl*' -name nccl.h 2>/dev/null | head -n1)
        [ -z "$header" ] || { NCCL_HOME=$(dirname "$(dirname "$header")"); break; }
    done
fi
[ -n "${NCCL_HOME:-}" ] || NCCL_HOME=/usr
[ -f "$NCCL_HOME/include/nccl.h" ] || die "no nccl.h under $NCCL_HOME/include (set NCCL_HOME)"
NCCL_LIB=$(find "$NCCL_HOME/lib" "$NCCL_HOME/lib64" "$NCCL_HOME/lib/x86_64-linux-gnu" -maxdepth 1 -name 'libnccl.so*' 2>/dev/null | sort | head -n1)
[ -n "$NCCL_LIB" ] || die "no libnccl.so under $NCCL_HOME"
# nccl-tests links -lnccl: a wheel ships libnccl.so.2 only, so link against a directory of our own
mkdir -p "$WORK/nccl/lib"
ln -sfn "$NCCL_HOME/include" "$WORK/nccl/include"
ln -sfn "$NCCL_LIB" "$WORK/nccl/lib/libnccl.so"
ln -sfn "$NCCL_LIB" "$WORK/nccl/lib/libnccl.so.2"
NCCL_CODE=$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$NCCL_HOME/include/nccl.h" | head -n1)

step "nccl-tests $VERSION: sources"
TARBALL=${NCCL_TESTS_TARBALL:-}
for dir in ../shared/vendor shared/vendor .build/vendor; do
    [ -n "$TARBALL" ] || { [ -f "$dir/nccl-tests-$VERSION.tar.gz" ] && TARBALL=$dir/nccl-tests-$VERSION.tar.gz; }
done
[ -n "$TARBALL" ] || die "nccl-tests-$VERSION.tar.gz not found (NCCL_TESTS_TARBALL, ../shared/vendor, shared/vendor, .build/vendor)"
WANT=$(sed -n "s/^  \"$VERSION\": sha256:\([0-9a-f]*\)$/\1/p" roles/validate/vars/main.yml)
GOT=$(sha256sum "$TARBALL" | cut -d' ' -f1)
[ -z "$WANT" ] || [ "$WANT" = "$GOT" ] || die "$TARBALL: sha256 $GOT, the role expects $WANT"
rm -rf "$WORK/src" && mkdir -p "$WORK/src"
tar -xzf "$TARBALL" -C "$WORK/src" --strip-components=1

step "nccl-tests $VERSION: build for sm_$CAP ($NVCC, CUDA $NVCC_VERSION; NCCL $NCCL_LIB)"
start=$(date +%s)
if ! make -C "$WORK/src" -j"$(nproc)" CUDA_HOME="$CUDA_HOME" NVCC="$NVCC" NCCL_HOME="$WORK/nccl" \
        NVCC_GENCODE="-gencode=arch=compute_$CAP,code=sm_$CAP" >"$WORK/build.log" 2>&1; then
    tail -n 60 "$WORK/build.log" >"$OUT/build.log"
    die "the build failed; the end of its output is in $OUT/build.log"
fi
tail -n 20 "$WORK/build.log" >"$OUT/build.log"
echo "built in $(( $(date +%s) - start )) s" | tee -a "$OUT/build.log"
BIN=$WORK/src/build/all_reduce_perf

{
    echo "gpus: $NGPUS"
    printf '%s\n' "$GPU_LINES" | sed 's/^/gpu: /'
    echo "driver CUDA: $DRIVER_CUDA"
    echo "nvcc: $NVCC_VERSION ($NVCC)"
    echo "NCCL: code $NCCL_CODE ($NCCL_LIB)"
    echo "nccl-tests: $VERSION ($TARBALL, sha256 $GOT)"
} | tee "$OUT/versions.txt"

run_perf() {  # name, then all_reduce_perf's arguments; text to $OUT/name.txt, -J to $OUT/name.json
    local name=$1
    shift
    rm -f "$OUT/$name.json"
    step "all_reduce_perf $* -g $NGPUS -J $OUT/$name.json"
    local rc=0
    LD_LIBRARY_PATH="$WORK/nccl/lib:${LD_LIBRARY_PATH:-}" NCCL_DEBUG=VERSION timeout 240 \
        "$BIN" "$@" -g "$NGPUS" -J "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 || rc=$?
    tail -n 8 "$OUT/$name.txt"
    echo "rc $rc"
}
run_perf allreduce -b 8 -e 8G -f 2 -c 1
run_perf iter -b 1G -e 8G -f 2 -I 1 -S 1

step "the project's parser, gate and report on those outputs"
python3 scripts/gpu/nccl_real_check.py "$OUT" "$NGPUS"
