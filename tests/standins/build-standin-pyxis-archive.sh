#!/usr/bin/env bash
# Pack the STAND-IN pyxis source tree (NOT NVIDIA pyxis) the way GitHub packs a pyxis
# release archive: one top directory, Makefile and C sources inside.
#
#   tests/standins/build-standin-pyxis-archive.sh OUTDIR [VERSION]
#
# Writes OUTDIR/pyxis-standin-VERSION.tar.gz (VERSION defaults to 0.0.0-standin) whose top
# directory is pyxis-VERSION/, for the pyxis role's build-from-source path.
set -euo pipefail

out=${1:?usage: $0 OUTDIR [VERSION]}
version=${2:-0.0.0-standin}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/pyxis-$version"
cp "$here/pyxis-standin/Makefile" "$here/pyxis-standin/spank_pyxis_standin.c" "$work/pyxis-$version/"
sed -i "s/^VERSION   ?= .*/VERSION   ?= $version/" "$work/pyxis-$version/Makefile"
tar -C "$work" --owner=0 --group=0 --mtime=@0 --sort=name -czf "$out/pyxis-standin-$version.tar.gz" "pyxis-$version"
echo "$out/pyxis-standin-$version.tar.gz"
