#!/usr/bin/env bash
# Prepare, on a build machine, what tools/gpu-check.sh runs on a GPU machine
# that can install nothing: a Release build with the CUDA plugin and the
# test binaries, plus the Debian shared libraries the tests link that an
# Ubuntu GPU host may lack, all in one folder that travels with the tree.
#
#   tools/gpu-prepare.sh [KIT]        KIT defaults to gpu-kit (ignored by git)
#
# KIT/bin, KIT/lib (libhotcold.so, lib/hotcold/ plugins), KIT/wave64 (the
# CUDA plugin built with HC_CUDA_EMULATE_WAVE64), KIT/deps (unpacked
# .debs: libsubunit, libjson-c, libvulkan), KIT/source-dir (the absolute
# path the tests were built with: their model paths are compiled in).
# Needs the packages tools/install-deps.sh installs and nvcc
# (CUDACXX or /usr/local/cuda/bin/nvcc).  About 3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${1:-gpu-kit}
build=build-gpu

# No ROCm plugin: the GPU machine has no HIP runtime to load it with.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHC_CUDA=ON -DHC_ROCM=OFF -DHC_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# The CUDA plugin again with 64-lane wavefronts (HC_CUDA_EMULATE_WAVE64),
# sm_90 only: gpu-check.sh runs the conformance suite on it for the wave64
# paths the ROCm plugin takes on gfx90a and gfx906.  KIT/wave64/libhc-cuda.so.
cmake -S . -B "$build-wave64" -DCMAKE_BUILD_TYPE=Release -DHC_CUDA=ON -DHC_CUDA_ARCHS=90 \
    -DHC_CUDA_EMULATE_WAVE64=ON -DHC_ROCM=OFF -DHC_VULKAN=OFF -DBUILD_TESTING=OFF \
    -DHC_WERROR=ON >/dev/null
cmake --build "$build-wave64" -j"$(nproc)" --target hc-cuda

rm -rf "$kit"
mkdir -p "$kit/deps"
cp -a "$build/bin" "$build/lib" "$kit/"
mkdir -p "$kit/wave64"
cp "$build-wave64/lib/hotcold/libhc-cuda.so" "$kit/wave64/"
pwd > "$kit/source-dir"

# The runtime libraries the test binaries and the Vulkan plugin need (and
# PCRE2, the BPE tokenizer's, in case the GPU machine lacks it).
debs=(libsubunit0 libjson-c5 libvulkan1 libpcre2-8-0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "${debs[@]}" >/dev/null)
for d in "$tmp"/*.deb; do
    dpkg -x "$d" "$kit/deps"
done
du -sh "$kit"
echo "gpu-prepare: $kit ready; on the GPU machine: tools/gpu-check.sh $kit (writes to \$OUT)"
