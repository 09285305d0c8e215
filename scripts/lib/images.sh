# shellcheck shell=bash
# Node images of the simulated cluster (sourced by scripts/cluster.sh after
# common.sh).
#
# base: debootstrap --variant=minbase from the Debian mirror, imported with
#       `podman import` (no registry is needed).
# node: images/node/Containerfile on top of base.
# Each image is tagged with a hash of everything it is built from (this file,
# images/<name>/, the package list, suite and mirrors, the base image's hash
# for node), so an unchanged input set is never rebuilt. The node image is
# also tagged with its suite (<repo>-node:trixie, <repo>-node:bookworm), the
# tag molecule.yml falls back to.

IMAGE_BUILD_DIR="$GPUCLUSTER_SIM_ROOT/.build/images"

base_inputs() {
    printf '%s\n' scripts/lib/images.sh images/base/packages images/base/sources.list \
        "suite=$GPUCLUSTER_SIM_SUITE" "mirror=$GPUCLUSTER_SIM_MIRROR" \
        "security=$GPUCLUSTER_SIM_SECURITY_MIRROR" "arch=$(dpkg --print-architecture)"
}

# The simulator's C library, built in the node image (images/node/build-nvml-sim.sh)
NVML_SIM_SOURCES=(nvml_sim/libnvml/nvml_sim.c nvml_sim/libnvml/gen_stubs.py nvml_sim/libnvml/Makefile)
NVML_SIM_SYMBOLS=nvml_sim/tests/data/real-h200-580.159.04/symbols.txt

node_inputs() {
    printf '%s\n' "base=$(base_hash)" scripts/lib/images.sh "${NVML_SIM_SOURCES[@]}" "$NVML_SIM_SYMBOLS"
    (cd "$GPUCLUSTER_SIM_ROOT" && find images/node -type f | LC_ALL=C sort)
}

base_hash() {
    local inputs=()
    mapfile -t inputs < <(base_inputs)
    content_hash "${inputs[@]}"
}

node_hash() {
    local inputs=()
    mapfile -t inputs < <(node_inputs)
    content_hash "${inputs[@]}"
}

base_image() { printf '%s-base:%s\n' "$GPUCLUSTER_SIM_IMAGE_REPO" "$(base_hash)"; }
node_image() { printf '%s-node:%s\n' "$GPUCLUSTER_SIM_IMAGE_REPO" "$(node_hash)"; }

package_list() {
    grep -v '^[[:space:]]*\(#\|$\)' "$GPUCLUSTER_SIM_ROOT/images/base/packages" | paste -sd, -
}

build_base() {
    local image=$1 rootfs
    mkdir -p "$IMAGE_BUILD_DIR"
    rootfs=$(mktemp -d "$IMAGE_BUILD_DIR/rootfs.XXXXXX")
    log "debootstrap $GPUCLUSTER_SIM_SUITE from $GPUCLUSTER_SIM_MIRROR into $rootfs"
    if ! debootstrap --variant=minbase --include="$(package_list)" \
            "$GPUCLUSTER_SIM_SUITE" "$rootfs" "$GPUCLUSTER_SIM_MIRROR" >"$rootfs.log" 2>&1; then
        tail -n 20 "$rootfs.log" >&2
        rm -rf "$rootfs"
        die "debootstrap of $GPUCLUSTER_SIM_SUITE from $GPUCLUSTER_SIM_MIRROR failed (full log: $rootfs.log)"
    fi
    rm -f "$rootfs.log"
    sed -e "s|@MIRROR@|$GPUCLUSTER_SIM_MIRROR|g" -e "s|@SECURITY_MIRROR@|$GPUCLUSTER_SIM_SECURITY_MIRROR|g" \
        -e "s|@SUITE@|$GPUCLUSTER_SIM_SUITE|g" "$GPUCLUSTER_SIM_ROOT/images/base/sources.list" \
        >"$rootfs/etc/apt/sources.list"
    # A fresh machine-id per container; no leftover package caches or lists.
    : >"$rootfs/etc/machine-id"
    rm -f "$rootfs/var/lib/dbus/machine-id"
    rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    # Old lists: ansible.builtin.apt with cache_valid_time updates them, as on
    # a machine whose package lists are stale.
    touch -d @0 "$rootfs/var/lib/apt/lists"
    log "importing $image"
    if ! tar -C "$rootfs" --numeric-owner -c . | pm import --quiet \
            --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL=SIGRTMIN+3' \
            --change "LABEL $GPUCLUSTER_SIM_LABEL=image" - "$image" >/dev/null; then
        rm -rf "$rootfs"
        die "podman import of $image failed"
    fi
    rm -rf "$rootfs"
}

build_node() {
    local image=$1 base=$2 context="$IMAGE_BUILD_DIR/node-context" source
    log "building $image from images/node/Containerfile"
    rm -rf "$context"
    mkdir -p "$context/nvml-sim/libnvml"
    cp -a "$GPUCLUSTER_SIM_ROOT/images/node/." "$context/"
    for source in "${NVML_SIM_SOURCES[@]}"; do
        cp "$GPUCLUSTER_SIM_ROOT/$source" "$context/nvml-sim/libnvml/"
    done
    cp "$GPUCLUSTER_SIM_ROOT/$NVML_SIM_SYMBOLS" "$context/nvml-sim/symbols.txt"
    # the builder stage reaches the Debian mirror through the host network (the default
    # build network resolves no names here)
    if ! pm build --pull=never --network host --label "$GPUCLUSTER_SIM_LABEL=image" \
            --build-arg "BASE_IMAGE=$base" -f "$context/Containerfile" \
            -t "$image" "$context" >"$IMAGE_BUILD_DIR/node-build.log" 2>&1; then
        tail -n 20 "$IMAGE_BUILD_DIR/node-build.log" >&2
        die "building $image failed (full log: $IMAGE_BUILD_DIR/node-build.log)"
    fi
    rm -rf "$context"
}

# Build what is missing; say so when nothing is. GPUCLUSTER_SIM_FORCE=1
# rebuilds both images even when present.
ensure_images() {
    local base node start problem
    problem=$(suite_host_problem "$GPUCLUSTER_SIM_SUITE")
    [ -z "$problem" ] || die "$problem"
    base=$(base_image)
    node=$(node_image)
    if [ "${GPUCLUSTER_SIM_FORCE:-0}" = 1 ] || ! pm image exists "$base"; then
        start=$(date +%s)
        build_base "$base"
        log "built $base in $(($(date +%s) - start))s"
    else
        log "image $base is up to date: nothing to build"
    fi
    if [ "${GPUCLUSTER_SIM_FORCE:-0}" = 1 ] || ! pm image exists "$node"; then
        start=$(date +%s)
        build_node "$node" "$base"
        log "built $node in $(($(date +%s) - start))s"
    else
        log "image $node is up to date: nothing to build"
    fi
    pm tag "$node" "${node%:*}:$GPUCLUSTER_SIM_SUITE"
}
