#!/usr/bin/env bash
# NVIDIA pyxis' release source archive for the simulated cluster, which the
# pyxis role copies to the nodes and builds there against their Slurm
# (pyxis_source_local: .build/pyxis/pyxis-<version>.tar.gz), as a site without
# internet does.
#
#   bash scripts/lib/pyxis-source.sh     # prints the archive's path
#
# From the local mirror (scripts/lib/vendor.sh: GPUCLUSTER_VENDOR_DIR, default
# ../shared/vendor) pyxis-<version>.tar.gz, checked against its SHA256SUMS;
# without it, GitHub's archive of the release tag (the role's pyxis_source_url),
# checked against the checksum the role knows for it (roles/pyxis/vars/main.yml).
# Beside the archive, <archive>.sha256 holds "sha256:<hex>": the inventory passes
# it to the role as pyxis_source_checksum, and the role checks the copy it builds.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"
# shellcheck source=scripts/lib/vendor.sh
. "$GPUCLUSTER_SIM_LIB/vendor.sh"

PYXIS_VERSION=0.24.0
PYXIS_SOURCE_URL=https://github.com/NVIDIA/pyxis/archive/refs/tags/v$PYXIS_VERSION.tar.gz

base=$GPUCLUSTER_SIM_ROOT/.build/pyxis
archive=$base/pyxis-$PYXIS_VERSION.tar.gz
mkdir -p "$base"
exec 8>"$base/.lock"
flock 8

src=$(vendor_file "pyxis-$PYXIS_VERSION.tar.gz")
if [ -n "$src" ]; then
    want=$(sha256sum "$src" | cut -d' ' -f1)
    if [ ! -f "$archive" ] || [ "$(sha256sum "$archive" | cut -d' ' -f1)" != "$want" ]; then
        install -m 0644 "$src" "$archive.part"
        mv -f "$archive.part" "$archive"
    fi
else
    # the checksum of GitHub's archive of the tag, as the role knows it
    want=$(sed -n "s/^ *\"$PYXIS_VERSION\": \"sha256:\([0-9a-f]\{64\}\)\"$/\1/p" "$GPUCLUSTER_SIM_ROOT/roles/pyxis/vars/main.yml")
    [ -n "$want" ] || die "roles/pyxis/vars/main.yml has no checksum for pyxis $PYXIS_VERSION (_pyxis_known_checksums)"
    if [ ! -f "$archive" ] || [ "$(sha256sum "$archive" | cut -d' ' -f1)" != "$want" ]; then
        log "no pyxis-$PYXIS_VERSION.tar.gz in $GPUCLUSTER_VENDOR_DIR: downloading $PYXIS_SOURCE_URL"
        vendor_download "$PYXIS_SOURCE_URL" "$archive.download"
        have=$(sha256sum "$archive.download" | cut -d' ' -f1)
        [ "$have" = "$want" ] || { rm -f "$archive.download"; die "$PYXIS_SOURCE_URL has sha256 $have, expected $want"; }
        mv -f "$archive.download" "$archive"
    fi
fi
[ "$(cat "$archive.sha256" 2>/dev/null)" = "sha256:$want" ] || {
    printf 'sha256:%s\n' "$want" >"$archive.sha256.part"
    mv -f "$archive.sha256.part" "$archive.sha256"
}
printf '%s\n' "$archive"
