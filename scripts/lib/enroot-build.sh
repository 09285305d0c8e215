#!/usr/bin/env bash
# NVIDIA enroot's `enroot` and `enroot+caps` .deb packages for the simulated
# cluster, which the enroot role installs from them through its air-gapped
# package source (enroot_package_source: local, enroot_local_dir: .build/enroot/debs),
# as a site without internet does.
#
#   bash scripts/lib/enroot-build.sh     # prints the directory holding the two .deb files
#
# From the local mirror (scripts/lib/vendor.sh: GPUCLUSTER_VENDOR_DIR, default
# ../shared/vendor): enroot-<version>-with-submodules.tar.gz, checked against its
# SHA256SUMS, built the way NVIDIA builds its release packages
# (pkg/release/docker-release-build.sh: CPPFLAGS="-DALLOW_SPECULATION -DINHERIT_FDS"
# make deb, whose debian/control gives both packages; the helpers are static
# musl programs, so a Debian 12 build installs on Debian 13 nodes). The build
# dependencies (enroot's doc/installation.md, plus the Debian packaging tools
# `make deb` runs) are installed from Debian's mirror when missing. The result
# is cached in .build/enroot/build-<key>, key = sha256 of the tarball and of this
# script: a second run builds nothing. A copy is kept in the machine's build cache
# (GPUCLUSTER_BUILD_CACHE, default ~/.cache/gpucluster-bringup; empty: none), so a
# fresh clone on the same machine copies it instead of building again (about a
# minute of 2 cores; CI runs on a fresh clone). Without the mirror's tarball, NVIDIA's
# published .deb files are downloaded from the GitHub release instead
# (.build/enroot/release-<version>-<arch>). .build/enroot/debs links to the one in use.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"
# shellcheck source=scripts/lib/vendor.sh
. "$GPUCLUSTER_SIM_LIB/vendor.sh"

ENROOT_VERSION=4.1.2
ENROOT_PACKAGE_RELEASE=1
ENROOT_RELEASE_URL=https://github.com/NVIDIA/enroot/releases/download/v$ENROOT_VERSION
# enroot's doc/installation.md (git is not needed: the tarball holds the submodules),
# then what `make deb` runs: dh_make, debuild (devscripts), debhelper with its
# apparmor addon, fakeroot, rename.ul (util-linux)
ENROOT_BUILD_DEPS=(gcc make libcap2-bin libtool automake libmd-dev autotools-dev dpkg-dev dh-make debhelper devscripts
    dh-apparmor fakeroot util-linux)

base=$GPUCLUSTER_SIM_ROOT/.build/enroot
arch=$(dpkg --print-architecture)
debs=("enroot_$ENROOT_VERSION-${ENROOT_PACKAGE_RELEASE}_$arch.deb" "enroot+caps_$ENROOT_VERSION-${ENROOT_PACKAGE_RELEASE}_$arch.deb")

has_debs() {  # dir
    local deb
    for deb in "${debs[@]}"; do
        [ -s "$1/$deb" ] || return 1
    done
}

# Each .deb is the package it is named after, at the pinned version.
check_debs() {  # dir
    local deb fields
    for deb in "${debs[@]}"; do
        fields=$(dpkg-deb -f "$1/$deb" Package Version Architecture) || die "$1/$deb is not a .deb package"
        [ "$fields" = "$(printf 'Package: %s\nVersion: %s-%s\nArchitecture: %s' "${deb%%_*}" "$ENROOT_VERSION" "$ENROOT_PACKAGE_RELEASE" "$arch")" ] \
            || die "$1/$deb is not ${deb%%_*} $ENROOT_VERSION-$ENROOT_PACKAGE_RELEASE for $arch: $(printf '%s' "$fields" | tr '\n' ' ')"
    done
}

build() {  # tarball dest
    local tarball=$1 dest=$2 work out start
    vendor_apt_install "${ENROOT_BUILD_DEPS[@]}"
    # The tree is built outside any git work tree, and git is kept from finding one above it:
    # `make deb` runs `make clean`, whose `git clean -f -d -x` / `git checkout .` lines are
    # meant for enroot's own submodules (here they only print errors, as in a release tarball).
    work=$(mktemp -d "${TMPDIR:-/tmp}/gpucluster-enroot-build.XXXXXX")
    out=$(mktemp -d "$base/tmp.XXXXXX")
    # shellcheck disable=SC2064  # expand now: work and out are local
    trap "rm -rf '$work' '$out'" EXIT
    # debuild writes its files beside the tree: the tree gets a parent of its own
    mkdir -p "$work/src/enroot"
    tar -C "$work/src/enroot" --strip-components=1 -xzf "$tarball"
    log "building enroot $ENROOT_VERSION (enroot, enroot+caps .deb) from $tarball; log: $dest/build.log"
    start=$(date +%s)
    # NVIDIA's release flags for the standard flavour; nothing else from the caller's build environment
    if ! (cd "$work/src/enroot" && env -u CFLAGS -u LDFLAGS -u CC -u MAKEFLAGS -u DEB_BUILD_OPTIONS -u GIT_DIR -u GIT_WORK_TREE \
            GIT_CEILING_DIRECTORIES="$work" CPPFLAGS="-DALLOW_SPECULATION -DINHERIT_FDS" make deb) >"$out/build.log" 2>&1; then
        cp "$out/build.log" "$dest.failed.log"
        die "make deb of enroot $ENROOT_VERSION failed; the end of $dest.failed.log: $(tail -n 5 "$dest.failed.log")"
    fi
    cp "${debs[@]/#/$work/src/enroot/dist/}" "$out/"
    check_debs "$out"
    {
        printf 'enroot %s-%s %s, built by scripts/lib/enroot-build.sh in %ss\n' "$ENROOT_VERSION" "$ENROOT_PACKAGE_RELEASE" "$arch" \
            "$(($(date +%s) - start))"
        printf 'source: %s sha256 %s\n' "$(basename "$tarball")" "$(sha256sum "$tarball" | cut -d' ' -f1)"
        (cd "$out" && sha256sum "${debs[@]}")
    } >"$out/BUILD-INFO"
    chmod 0755 "$out"
    rm -rf "$dest" "$dest.failed.log" "$work"
    mv "$out" "$dest"
    trap - EXIT
}

download() {  # dest
    local dest=$1 deb
    mkdir -p "$dest"
    for deb in "${debs[@]}"; do
        [ -s "$dest/$deb" ] || vendor_download "$ENROOT_RELEASE_URL/$deb" "$dest/$deb"
    done
    check_debs "$dest"
}

# The machine's build cache: the same key built by another clone of this repository.
cache=${GPUCLUSTER_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/gpucluster-bringup}
cache=${cache:+$cache/enroot}

from_cache() {  # dir: copied from the cache when it holds a whole build, checked as a fresh one is
    local src=$cache/$1 tmp
    [ -n "$cache" ] && has_debs "$src" && [ -f "$src/BUILD-INFO" ] || return 1
    tmp=$(mktemp -d "$base/tmp.XXXXXX")
    # (check_debs dies on a bad file: in a subshell, a bad copy is built again instead)
    if ! cp -a "$src/." "$tmp/" || ! (check_debs "$tmp") 2>/dev/null; then
        rm -rf "$tmp"
        return 1
    fi
    chmod 0755 "$tmp"
    rm -rf "${base:?}/$1"
    mv "$tmp" "$base/$1"
    log "enroot $ENROOT_VERSION packages copied from the build cache $src"
}

to_cache() {  # dir: a copy for the next clone on this machine (a cache that cannot be written is left alone)
    local tmp
    [ -n "$cache" ] && mkdir -p "$cache" 2>/dev/null || return 0
    tmp=$(mktemp -d "$cache/tmp.XXXXXX" 2>/dev/null) || return 0
    if cp -a "$base/$1/." "$tmp/" 2>/dev/null; then
        rm -rf "${cache:?}/$1"
        mv "$tmp" "$cache/$1" 2>/dev/null || rm -rf "$tmp"
    else
        rm -rf "$tmp"
    fi
    return 0
}

mkdir -p "$base"
# one build at a time (cluster.sh and molecule's prepare may both ask)
exec 8>"$base/.lock"
flock 8

tarball=$(vendor_file "enroot-$ENROOT_VERSION-with-submodules.tar.gz")
if [ -n "$tarball" ]; then
    key=$({ sha256sum <"$tarball"; sha256sum <"${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)
    dir=build-$key
    if ! has_debs "$base/$dir" || [ ! -f "$base/$dir/BUILD-INFO" ]; then
        from_cache "$dir" || { build "$tarball" "$base/$dir"; to_cache "$dir"; }
    fi
    # earlier builds (another tarball or script) are not used any more
    find "$base" -mindepth 1 -maxdepth 1 -name 'build-*' ! -name "$dir" -exec rm -rf {} +
else
    log "no enroot-$ENROOT_VERSION-with-submodules.tar.gz in $GPUCLUSTER_VENDOR_DIR: using NVIDIA's release packages from $ENROOT_RELEASE_URL"
    dir=release-$ENROOT_VERSION-$arch
    download "$base/$dir"
fi
vendor_link "$dir" "$base/debs"
printf '%s\n' "$base/debs"
