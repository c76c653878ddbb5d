#!/bin/sh
# The kernel sources shared by the CUDA and ROCm plugins (issue 15) name no
# vendor and assume no warp width: plugins/cuda/*.cu and *.cuh are compiled
# by nvcc and by hipcc, for warps of 32 lanes and wavefronts of 64, and
# gpu_vendor.h is the one place where the two differ.  A file fails when
# its code (comments and string literals are not read) has
#   - a warp-level intrinsic of either vendor: __shfl*, __ballot*,
#     __any/__all(_sync), __activemask, __syncwarp, __match_*, __reduce_*_sync
#     (the twins are gpu_vendor.h's hc_shfl_xor, hc_ballot, hc_shfl_up_int);
#   - warpSize (the width is HC_WARP, from the build target);
#   - a runtime name: cuda*, hip* (types, calls, headers) or
#     cooperative_groups (gpu_vendor.h's hc_gpu_stream, hc_gpu_last_error);
#   - inline assembly or a vendor builtin: asm, __nv*, __builtin_amdgcn*;
#   - a warp of 32 spelled out: the literals 32 and 31, a shift by 5, an
#     all-ones 32- or 64-bit mask (lane math is HC_WARP's: % HC_WARP,
#     / HC_WARP; a block size such as Q8_0's 32 has its own name).
#
#   tests/gpu_sources.sh [DIR]   DIR: plugins/cuda; exit 0: clean, 1: listed
set -eu
dir=${1:-$(dirname "$0")/../plugins/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The code of a file, line for line: comments and the insides of string
# and character literals become spaces, so line numbers stay true.
strip() {
    awk '
    BEGIN { state = 0 } # 0 code, 1 block comment, 2 string, 3 char
    {
        out = ""; n = length($0); i = 1
        while (i <= n) {
            c = substr($0, i, 1); d = substr($0, i, 2)
            if (state == 1) {
                if (d == "*/") { state = 0; out = out "  "; i += 2; continue }
                out = out " "; i++; continue
            }
            if (state == 2 || state == 3) {
                q = state == 2 ? "\"" : "\047"
                if (c == "\\") { out = out "  "; i += 2; continue }
                if (c == q) { state = 0; out = out c; i++; continue }
                out = out " "; i++; continue
            }
            if (d == "/*") { state = 1; out = out "  "; i += 2; continue }
            if (d == "//") break
            if (c == "\"") state = 2
            else if (c == "\047") state = 3
            out = out c; i++
        }
        if (state >= 2) state = 0 # a literal ends with its line
        print out
    }' "$1"
}

# rule: an extended regex (GNU grep -E), then what to use instead.
rules() {
    cat <<'EOF'
__shfl[A-Za-z0-9_]*	a shuffle: hc_shfl_xor / hc_shfl_up_int (gpu_vendor.h)
__ballot[A-Za-z0-9_]*|\b__(any|all|uni)(_sync)?\b|__activemask|__syncwarp|__match_[a-z_]+|__reduce_[a-z_]+_sync	a warp vote or sync: hc_ballot (gpu_vendor.h)
\bwarpSize\b	the runtime's warp width: HC_WARP (from the build target)
\bcuda[A-Za-z0-9_]*|\bhip[A-Z_][A-Za-z0-9_]*|\bhip/|cooperative_groups	a runtime name: hc_gpu_stream, hc_gpu_error, hc_gpu_last_error (gpu_vendor.h)
\basm\b|__asm__|\b__nv[a-z_]*|__builtin_amdgcn	assembly or a vendor builtin: a gpu_vendor.h function
\b(32|31)[uUlL]*\b	a literal 32 or 31 (a warp of 32?): HC_WARP, or a named constant
(>>|<<)[[:space:]]*5\b	a shift by 5 (lane math for 32 lanes): / HC_WARP, * HC_WARP
\b0[xX][fF]{8}([fF]{8})?[uUlL]*\b	an all-lanes mask: gpu_vendor.h's calls take none
EOF
}

status=0
for f in "$dir"/*.cu "$dir"/*.cuh; do
    [ -e "$f" ] || continue
    strip "$f" > "$tmp/code"
    rules > "$tmp/rules"
    while IFS='	' read -r re why; do
        grep -nE "$re" "$tmp/code" > "$tmp/hits" || continue
        while IFS= read -r hit; do
            line=${hit%%:*}
            echo "$(basename "$f"):$line: $why:"
            sed -n "${line}p" "$f" | sed 's/^/    /'
        done < "$tmp/hits"
        status=1
    done < "$tmp/rules"
done
if [ $status -eq 0 ]; then
    echo "ok: the shared kernel sources in $dir name no vendor and assume no warp width"
fi
exit $status
