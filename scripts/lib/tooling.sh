# shellcheck shell=bash
# Test tool-chain helpers for scripts/test.sh (sourced, not run): Debian
# packages, the pinned virtualenv, the collection link.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VENV="$ROOT/.venv"
export VENV

# Install Debian packages that are missing; `apt-get update` only when needed.
ensure_apt_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing Debian packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || return 1
}

# The virtualenv with the pinned tools; rebuilt when requirements-dev.txt changes.
ensure_venv() {
    local stamp="$VENV/.requirements.sha256" want
    want=$(sha256sum "$ROOT/requirements-dev.txt" | cut -d' ' -f1)
    if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        echo "virtualenv up to date ($VENV)"
        return 0
    fi
    ensure_apt_packages python3-venv || true
    echo "creating virtualenv $VENV from requirements-dev.txt"
    rm -rf "$VENV"
    python3 -m venv "$VENV" || return 1
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements-dev.txt" 2>&1 \
        | grep -v '^WARNING: Location'
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    echo "$want" > "$stamp"
}

# The checkout as ansible_collections/gpucluster/bringup, for ansible-playbook,
# ansible-lint, molecule and pytest.
link_collection() {
    local parent="$ROOT/.build/collections/ansible_collections/gpucluster"
    mkdir -p "$parent"
    ln -sfn ../../../.. "$parent/bringup"
}

# Debian packages of the non-free component (not enabled on most machines),
# fetched with a private apt source list and state (the machine's own apt
# configuration is not touched) and unpacked into DIR/x:
#   fetch_nonfree PACKAGE DIR
fetch_nonfree() {
    local package=$1 dir=$2 mirror suite apt_opts deb
    rm -rf "$dir" && mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc" || return 1
    mirror=$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null)
    suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "deb ${mirror:-http://deb.debian.org/debian} $suite non-free" > "$dir/etc/sources.list"
    apt_opts=(-o "Dir::Etc::sourcelist=$dir/etc/sources.list" -o Dir::Etc::sourceparts=/dev/null
              -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Debug::NoLocking=1)
    (cd "$dir" && apt-get -qq "${apt_opts[@]}" update && apt-get -qq "${apt_opts[@]}" download "$package") \
        >"$dir/apt.log" 2>&1 || { echo "cannot download $package (see $dir/apt.log)" >&2; return 1; }
    deb=$(find "$dir" -maxdepth 1 -name "${package}_*.deb" | head -1)
    [ -n "$deb" ] || { echo "no $package package was downloaded" >&2; return 1; }
    mkdir -p "$dir/x" && dpkg-deb -x "$deb" "$dir/x" || return 1
    rm -rf "$dir/lists" "$dir/cache"
}

# One file of a non-free package, fetched once into .build/<name>/<dir of the
# file>; prints that directory:
#   ensure_nonfree_file PACKAGE PATH-IN-PACKAGE NAME
ensure_nonfree_file() {
    local package=$1 path=$2 dir="$ROOT/.build/$3" dest
    dest="$dir/$(basename "$(dirname "$path")")"
    if [ -f "$dest/$(basename "$path")" ]; then
        echo "$dest"
        return 0
    fi
    fetch_nonfree "$package" "$dir" || return 1
    mkdir -p "$dest" && cp -p "$dir/x/$path" "$dest/" || return 1
    rm -rf "$dir/x" "$dir"/*.deb
    echo "$dest"
}

# NVIDIA's nvml.h, from Debian's libnvidia-ml-dev: the simulated
# libnvidia-ml.so.1 (nvml_sim/libnvml) is compiled against it
# (.build/nvml-header/include/nvml.h).
ensure_nvml_header() {
    ensure_nonfree_file libnvidia-ml-dev usr/include/nvml.h nvml-header
}

# NVIDIA's real CUDA MPS control program (Debian's nvidia-cuda-mps; it needs
# only libc and no GPU to start, answer and quit), for the unit tests of the
# slurm role's MPS hooks (.build/nvidia-cuda-mps/bin/nvidia-cuda-mps-control).
ensure_mps_control() {
    ensure_nonfree_file nvidia-cuda-mps usr/bin/nvidia-cuda-mps-control nvidia-cuda-mps
}
