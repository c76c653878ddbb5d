#!/usr/bin/env bash
# Prepare, on a build machine, what tools/gpu-check.sh runs on a GPU machine
# that can install nothing: a Release build with the CUDA plugin and the
# test binaries, plus the Debian shared libraries the tests link that an
# Ubuntu GPU host may lack, all in one folder that travels with the tree.
#
#   tools/gpu-prepare.sh [KIT]        KIT defaults to gpu-kit (ignored by git)
#
# KIT/bin, KIT/lib (libhotcold.so, lib/hotcold/ plugins), KIT/deps (unpacked
# .debs: libsubunit, libjson-c, libvulkan), KIT/source-dir (the absolute
# path the tests were built with: their model paths are compiled in).
# Needs the packages tools/install-deps.sh installs and nvcc
# (CUDACXX or /usr/local/cuda/bin/nvcc).  About 3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${1:-gpu-kit}
build=build-gpu

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHC_CUDA=ON -DHC_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"

rm -rf "$kit"
mkdir -p "$kit/deps"
cp -a "$build/bin" "$build/lib" "$kit/"
pwd > "$kit/source-dir"

# The runtime libraries the test binaries and the Vulkan plugin need.
debs=(libsubunit0 libjson-c5 libvulkan1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "${debs[@]}" >/dev/null)
for d in "$tmp"/*.deb; do
    dpkg -x "$d" "$kit/deps"
done
du -sh "$kit"
echo "gpu-prepare: $kit ready; on the GPU machine: tools/gpu-check.sh $kit (writes to \$OUT)"
