#!/bin/sh
# SchedMD's own Debian packaging of a Slurm release tarball (the slurm_packages_build role runs this on the build
# host, as root): build dependencies from debian/control (mk-build-deps), nvml.h, dpkg-buildpackage -b -uc -us; the
# .debs land in BUILD_DIR/debs.
#   build-slurm-smd.sh TARBALL BUILD_DIR JOBS NVML(true|false) NVML_INCLUDE(empty: the distribution's libnvidia-ml-dev)
set -eu
inner=false
if [ "${1:-}" = --inner ]; then inner=true; shift; fi
tarball=$1 build=$2 jobs=$3 nvml=$4 nvml_include=${5:-}
export DEBIAN_FRONTEND=noninteractive
[ "$jobs" -gt 0 ] 2>/dev/null || jobs=$(nproc)
src=$build/src
mkdir -p "$build"
# the build's output goes to build.log on the build host (the script runs itself again for that, set -e kept); a
# failure prints its end
if [ "$inner" = false ]; then
    if ! sh "$0" --inner "$@" >"$build/build.log" 2>&1; then
        tail -n 60 "$build/build.log" >&2
        echo "the build failed (its whole log: $build/build.log on the build host)" >&2
        exit 1
    fi
    ls "$build/debs"
    exit 0
fi
rm -rf "$src" "$build/debs" "$build/nvml" "$build"/*.deb
mkdir -p "$src" "$build/debs"

echo "== build tools"
apt-get update -qq
apt-get install -y -qq --no-install-recommends devscripts equivs build-essential fakeroot >/dev/null

echo "== unpack $tarball"
tar -xaf "$tarball" -C "$src" --strip-components=1
[ -f "$src/debian/control" ] || { echo "$tarball has no debian/control: SchedMD's packaging is in Slurm 23.11 and newer"; exit 3; }

echo "== build dependencies (mk-build-deps debian/control)"
(cd "$src" && mk-build-deps -i -r -t 'apt-get -y -qq --no-install-recommends' debian/control >/dev/null)

flags_cpp="" flags_ld=""
if [ "$nvml" = true ]; then
    mkdir -p "$build/nvml/include" "$build/nvml/lib"
    if [ -n "$nvml_include" ]; then
        [ -f "$nvml_include/nvml.h" ] || { echo "slurm_packages_build_nvml_include is $nvml_include, which holds no nvml.h"; exit 4; }
        cp "$nvml_include/nvml.h" "$build/nvml/include/"
    else
        # NVIDIA's header from the distribution's libnvidia-ml-dev (Debian: non-free, Ubuntu: multiverse), fetched
        # with a private apt source list (the host's own apt sources are not touched) and unpacked, not installed:
        # the package would pull in NVIDIA's driver library, which a build host needs not
        # shellcheck source=/dev/null
        . /etc/os-release
        mirror=$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true)
        component=non-free
        [ "${ID:-}" = ubuntu ] && component=multiverse
        nf=$build/nvml/apt
        mkdir -p "$nf/lists/partial" "$nf/cache/archives/partial"
        echo "deb ${mirror:-http://deb.debian.org/debian} ${VERSION_CODENAME} $component" > "$nf/sources.list"
        opts="-o Dir::Etc::sourcelist=$nf/sources.list -o Dir::Etc::sourceparts=/dev/null -o Dir::State::Lists=$nf/lists -o Dir::Cache=$nf/cache"
        # shellcheck disable=SC2086
        (cd "$nf" && apt-get -qq $opts update && apt-get -qq $opts download libnvidia-ml-dev)
        dpkg-deb -x "$nf"/libnvidia-ml-dev_*.deb "$nf/x"
        cp "$nf/x/usr/include/nvml.h" "$build/nvml/include/"
    fi
    # configure (auxdir/x_ac_nvml.m4) links a test program against libnvidia-ml; the plugin itself does not link it
    # (slurmd dlopen()s the driver's libnvidia-ml.so.1 at run time), so a link stub does, as CUDA's lib64/stubs does
    printf 'int nvmlInit(void) { return 999; }\nint nvmlDeviceSetMemoryLockedClocks(void *d, unsigned a, unsigned b) { return 999; }\n' \
        > "$build/nvml/stub.c"
    cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$build/nvml/lib/libnvidia-ml.so" "$build/nvml/stub.c"
    flags_cpp="-I$build/nvml/include" flags_ld="-L$build/nvml/lib"
fi

echo "== dpkg-buildpackage -b -uc -us (jobs $jobs)"
cd "$src"
DEB_BUILD_OPTIONS="noautodbgsym nocheck parallel=$jobs" DEB_CPPFLAGS_APPEND="$flags_cpp" DEB_LDFLAGS_APPEND="$flags_ld" \
    dpkg-buildpackage -b -uc -us
if [ "$nvml" = true ] && ! grep -q '^#define HAVE_NVML 1' "$src"/obj-*/config.h; then
    echo "configure found no NVML (see $src/obj-*/config.log)"
    exit 5
fi
rm -f "$build"/slurm-smd-build-deps_*
mv "$build"/*.deb "$build/debs/"
rm -f "$build"/*.buildinfo "$build"/*.changes
