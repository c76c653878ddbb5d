#!/bin/sh
# gpu_sources.sh catches what it is for: each planted line below, alone in a
# kernel file, must fail the check and be named in its output; the same
# words in comments and string literals, and the spellings the kernels use
# (HC_WARP, hc_shfl_xor, uint32_t, HC_QK8_0), must pass.
#
#   tests/gpu_sources_selftest.sh   exit 0: every case as expected
set -eu
check=$(dirname "$0")/gpu_sources.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

kernel() { # kernel BODY_LINE > file
    printf '#include "gpu_vendor.h"\n__global__ void k(float *x, bool p)\n{\n    float v = x[threadIdx.x];\n%s\n    x[threadIdx.x] = v;\n}\n' "$1"
}

fail=0
n=0
while IFS= read -r planted; do
    [ -n "$planted" ] || continue
    n=$((n + 1))
    kernel "    $planted" > "$tmp/planted.cu"
    if out=$(sh "$check" "$tmp" 2>&1); then
        echo "FAIL: not caught: $planted"
        fail=1
    elif ! echo "$out" | grep -qF "planted.cu:5:"; then
        echo "FAIL: caught, but not at its line: $planted"
        echo "$out"
        fail=1
    else
        echo "caught: $planted  ->  $(echo "$out" | head -1)"
    fi
done <<'EOF_CASES'
v += __shfl_down_sync(m, v, 1);
v += __shfl_xor(v, 1);
unsigned long long b = __ballot_sync(m, p);
if (__any_sync(m, p)) v = 0;
__syncwarp();
unsigned m = __activemask();
int w = warpSize;
cudaStream_t s = 0;
v = (float)cudaGetLastError();
hipLaunchKernelGGL(k, 1, 1, 0, 0, x, p);
#include <hip/hip_runtime.h>
asm volatile("bar.sync 1, 64;");
int lane = threadIdx.x & 31;
int lane = threadIdx.x % 32;
int warp = threadIdx.x >> 5;
unsigned m = 0xffffffffu;
unsigned long long m = 0xFFFFFFFFFFFFFFFFull;
__shared__ float part[256 / 32];
EOF_CASES

n_clean=0
while IFS= read -r clean; do
    [ -n "$clean" ] || continue
    n_clean=$((n_clean + 1))
    kernel "    $clean" > "$tmp/planted.cu"
    if ! out=$(sh "$check" "$tmp" 2>&1); then
        echo "FAIL: a clean line was refused: $clean"
        echo "$out"
        fail=1
    fi
done <<'EOF_CLEAN'
v += hc_shfl_xor(v, HC_WARP / 2); /* __shfl_xor_sync(0xffffffff, v, 16): lane & 31 */
const char *why = "warpSize is 32, cudaGetLastError";
uint32_t u = 0; int32_t i = (int32_t)(threadIdx.x % HC_WARP); v += (float)(u + i);
v *= (float)HC_QK8_0; // blocks of 32, >> 5
const uint64_t votes = hc_ballot(p); v += (float)__popcll(votes);
EOF_CLEAN

if [ $fail -eq 0 ]; then
    echo "ok: $n planted violations caught, $n_clean clean lines passed"
fi
exit $fail
