#!/bin/sh
# Builder stage of the node image: the NVML SIMULATOR's libnvidia-ml.so.1
# (nvml_sim/libnvml, copied into the build context as nvml-sim/) compiled
# against NVIDIA's nvml.h, and packaged as nvmlsim-libnvidia-ml, which
# Provides libnvidia-ml.so.1: Debian's python3-pynvml depends on
# "libnvidia-ml1 | ... | libnvidia-ml.so.1", so apt installs the REAL
# bindings over it on a simulated GPU node as on a node with a driver.
# scripts/lib/node-prepare.sh installs the package on GPU nodes only.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update
apt-get -qq install -y --no-install-recommends gcc libc6-dev make >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }

# nvml.h: Debian's libnvidia-ml-dev (component non-free), downloaded with a
# private source list and unpacked, never installed.
mkdir -p /tmp/nf/lists/partial /tmp/nf/cache/archives/partial /tmp/nf/x
grep '^deb ' /etc/apt/sources.list | awk '{print "deb", $2, $3, "non-free"}' >/tmp/nf/sources.list
set -- -o Dir::Etc::sourcelist=/tmp/nf/sources.list -o Dir::Etc::sourceparts=/dev/null \
    -o Dir::State::Lists=/tmp/nf/lists -o Dir::Cache=/tmp/nf/cache
apt-get -qq "$@" update
(cd /tmp/nf && apt-get -qq "$@" download libnvidia-ml-dev) >/tmp/nf/download.log 2>&1 || { cat /tmp/nf/download.log; exit 1; }
dpkg-deb -x /tmp/nf/libnvidia-ml-dev_*.deb /tmp/nf/x

make -s -C /src/libnvml NVML_INCLUDE=/tmp/nf/x/usr/include OUT=/out SYMBOLS=/src/symbols.txt

arch=$(dpkg --print-architecture)
multiarch=$(gcc -print-multiarch)
pkg=/tmp/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/$multiarch" /deb
install -m 0644 /out/libnvidia-ml.so.1 "$pkg/usr/lib/$multiarch/libnvidia-ml.so.1"
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: nvmlsim-libnvidia-ml
Version: 1.0
Architecture: $arch
Maintainer: gpucluster.bringup contributors
Provides: libnvidia-ml.so.1 (= 580.159.04)
Conflicts: libnvidia-ml1, libnvidia-tesla-ml1
Section: non-free/libs
Priority: optional
Description: NVML SIMULATOR's libnvidia-ml.so.1 (gpucluster.bringup test tool)
 Not NVIDIA's library: every call is answered by the nvmlsim simulator
 (python3 -m nvmlsim.libserver) from the simulated node's state.
CONTROL
printf '#!/bin/sh\nset -e\nldconfig\n' >"$pkg/DEBIAN/postinst"
chmod 0755 "$pkg/DEBIAN/postinst"
dpkg-deb --root-owner-group --build "$pkg" "/deb/nvmlsim-libnvidia-ml_1.0_$arch.deb" >/dev/null
