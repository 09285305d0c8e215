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
