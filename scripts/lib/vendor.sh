# shellcheck shell=bash
# The vendored upstream sources the simulated cluster builds its real enroot
# and pyxis from (sourced, not run; needs common.sh first).
#
# GPUCLUSTER_VENDOR_DIR is an optional LOCAL MIRROR of upstream release files
# with a SHA256SUMS file, as a site without internet keeps one; unset, it is
# ../shared/vendor beside the checkout, or beside the repository the checkout
# was cloned from (a clone of a local repository: CI's clean clone, a throwaway
# clone for a test run). Nothing from it is copied into the repository: what is
# built or verified from it goes under .build/. Where the folder or a file is
# absent, the callers fetch the same release from its upstream URL (GitHub)
# instead.

vendor_default_dir() {
    local origin
    if [ -d "$GPUCLUSTER_SIM_ROOT/../shared/vendor" ]; then
        printf '%s\n' "$GPUCLUSTER_SIM_ROOT/../shared/vendor"
        return
    fi
    origin=$(git -C "$GPUCLUSTER_SIM_ROOT" config --get remote.origin.url 2>/dev/null || true)
    origin=${origin#file://}
    if [ -n "$origin" ] && [ "${origin#/}" != "$origin" ] && [ -d "$origin/../shared/vendor" ]; then
        printf '%s\n' "$origin/../shared/vendor"
        return
    fi
    printf '%s\n' "$GPUCLUSTER_SIM_ROOT/../shared/vendor"
}

GPUCLUSTER_VENDOR_DIR=${GPUCLUSTER_VENDOR_DIR:-$(vendor_default_dir)}

# The vendored file NAME when the mirror has it (with its SHA256SUMS line), else
# nothing. A file there that does not match its SHA256SUMS line is an error.
vendor_file() {  # name
    local name=$1 dir=$GPUCLUSTER_VENDOR_DIR want have
    [ -f "$dir/$name" ] || return 0
    [ -f "$dir/SHA256SUMS" ] || die "$dir/$name has no $dir/SHA256SUMS to be checked against"
    want=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1 }' "$dir/SHA256SUMS")
    [ -n "$want" ] || die "$dir/SHA256SUMS has no line for $name"
    have=$(sha256sum "$dir/$name" | cut -d' ' -f1)
    [ "$have" = "$want" ] || die "$dir/$name has sha256 $have, expected $want (its line in $dir/SHA256SUMS)"
    printf '%s\n' "$dir/$name"
}

# Download URL to DEST (atomically: a partial download never has DEST's name).
vendor_download() {  # url dest
    local url=$1 dest=$2
    command -v curl >/dev/null || die "curl is needed to download $url"
    mkdir -p "$(dirname "$dest")"
    curl -fsSL --retry 3 --connect-timeout 20 -o "$dest.part" "$url" \
        || { rm -f "$dest.part"; die "downloading $url failed (no local mirror either: $GPUCLUSTER_VENDOR_DIR)"; }
    mv -f "$dest.part" "$dest"
}

# Install the Debian packages that are missing (root only), or say which are.
vendor_apt_install() {  # package...
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    [ "$(id -u)" -eq 0 ] || die "these Debian packages are needed: ${missing[*]} (apt-get install -y --no-install-recommends ${missing[*]})"
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    } || die "installing ${missing[*]} failed"
}

# Point LINK at TARGET (a sibling name) atomically.
vendor_link() {  # target link
    ln -sfn "$1" "$2.new.$$"
    mv -fT "$2.new.$$" "$2"
}
