#!/usr/bin/env bash
# Build the STAND-IN enroot packages (NOT NVIDIA enroot) for the enroot role's tests.
#
#   tests/standins/build-standin-debs.sh OUTDIR
#
# Writes OUTDIR/enroot_0.0.0~standin-1_ARCH.deb and OUTDIR/enroot+caps_0.0.0~standin-1_ARCH.deb,
# named and laid out like enroot's release packages (package names enroot and enroot+caps,
# /usr/bin/enroot, /etc/enroot/{enroot.conf,hooks.d,mounts.d,environ.d},
# /usr/share/enroot/hooks.d/50-slurm-{pmi,pytorch}.sh), so the role installs them through
# the same steps as a real release. The version 0.0.0~standin, the package descriptions and
# `enroot version` all say STAND-IN. /usr/bin/enroot is tests/standins/enroot-standin/enroot.
set -euo pipefail

out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=0.0.0~standin-1
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

pkg=$work/enroot
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/etc/enroot/hooks.d" "$pkg/etc/enroot/mounts.d" \
    "$pkg/etc/enroot/environ.d" "$pkg/usr/share/enroot/hooks.d" "$pkg/usr/share/doc/enroot"
install -m 0755 "$here/enroot-standin/enroot" "$pkg/usr/bin/enroot"
install -m 0755 "$here/enroot-standin/hooks/50-slurm-pmi.sh" "$here/enroot-standin/hooks/50-slurm-pytorch.sh" \
    "$pkg/usr/share/enroot/hooks.d/"
printf '# STAND-IN enroot.conf (gpucluster.bringup test package, not NVIDIA enroot)\n' > "$pkg/etc/enroot/enroot.conf"
printf 'This package is a STAND-IN for NVIDIA enroot built by gpucluster.bringup tests/standins.\nIt is not enroot.\n' \
    > "$pkg/usr/share/doc/enroot/README.standin"
printf '/etc/enroot/enroot.conf\n' > "$pkg/DEBIAN/conffiles"
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: enroot
Version: $version
Architecture: $arch
Maintainer: gpucluster.bringup tests <tests@example.invalid>
Depends: bash, curl, jq, squashfs-tools, tar, gzip, coreutils
Section: utils
Priority: optional
Description: STAND-IN for NVIDIA enroot (test package, NOT enroot)
 Built by gpucluster.bringup tests/standins/build-standin-debs.sh. Its enroot
 command follows enroot's CLI for import, digest, create, list and remove only.
CONTROL
dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$out/enroot_${version}_${arch}.deb" > /dev/null

caps=$work/caps
install -d -m 0755 "$caps/DEBIAN" "$caps/usr/share/doc/enroot+caps"
printf 'This package is a STAND-IN for enroot+caps (NVIDIA enroot) built by gpucluster.bringup tests.\n' \
    > "$caps/usr/share/doc/enroot+caps/README.standin"
cat > "$caps/DEBIAN/control" <<CONTROL
Package: enroot+caps
Version: $version
Architecture: $arch
Maintainer: gpucluster.bringup tests <tests@example.invalid>
Depends: enroot (= $version), libcap2-bin
Section: utils
Priority: optional
Description: STAND-IN for NVIDIA enroot+caps (test package, NOT enroot)
 Built by gpucluster.bringup tests/standins/build-standin-debs.sh. The real
 package grants file capabilities to enroot's helpers; this one installs nothing.
CONTROL
dpkg-deb --root-owner-group -Zgzip --build "$caps" "$out/enroot+caps_${version}_${arch}.deb" > /dev/null
ls "$out"
