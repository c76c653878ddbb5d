#version 450
/*
 * axpy_rows: y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c], k in list order.
 *
 * Each invocation owns one column c of y for up to TILE tokens.  A long
 * list is also split into n_slices consecutive slices (phase 1): the
 * workgroups of slice s sum its entries in list order into D[s], a partial
 * of every column; then (phase 2) one invocation per column adds D[0],
 * D[1], ... to y in slice order.  A GPU then has n_slices times as many
 * workgroups in flight and each walks a list n_slices times shorter (one
 * workgroup per 64 columns over the whole list left most of an H200 idle
 * and ran at 2.6 GB/s).  Short lists run in one pass (phase 0): y plus the
 * entries in list order.  Either way no two invocations write the same
 * element, no atomics are used, and the order of every sum is fixed by the
 * shapes alone, so results are the same on every run.  h is read only at
 * listed rows (unlisted entries may hold anything, even nan).
 *
 * Bindings: W = Wt (windows), A = h (n x rows F32), B = idx (int32),
 * C = y (n x cols F32), D = partials (n_slices x n x cols F32), E = the
 * list length (counted: axpy_rows_counted slices by it, below).
 */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "weights.glsl"

layout(std430, set = 0, binding = 1) readonly buffer H { float h[]; };
layout(std430, set = 0, binding = 2) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 3) buffer Y { float y[]; };
layout(std430, set = 0, binding = 4) buffer D { float part[]; };

/* The slices a list of n entries runs in: the rule of ops_weight.c's
 * run() (so that a counted call sums in the order of the plain call for
 * the same length): lists of at least 32 entries in up to 16 slices of at
 * least 16, none where a token's partials would not fit a binding. */
void slicing(uint n, out uint n_slices, out uint items)
{
    n_slices = 1u;
    items = n;
    if (n < 32u)
        return;
    n_slices = min(n / 16u, 16u);
    items = (n + n_slices - 1u) / n_slices;
    n_slices = (n + items - 1u) / items;
    if (n_slices > p.slice_fit) {
        n_slices = 1u;
        items = n;
    }
}

void main()
{
    const uint blocks = (p.cols + WG - 1u) / WG;
    const uint wi = work_item();
    const uint c = (wi % blocks) * WG + gl_LocalInvocationIndex;
    if (c >= p.cols)
        return; /* no barriers below: a partial workgroup is fine */
    uint phase = p.phase, n_slices = p.n_slices, slice_items = p.slice_items;
    const uint len = list_length();
    if (p.counted != 0u && phase != 0u) {
        /* Recorded as slices for the longest list: slice for this one. */
        slicing(len, n_slices, slice_items);
        if (n_slices == 1u) {
            if (phase == 1u)
                return; /* no partials: phase 2 runs the one pass */
            phase = 0u;
        }
    }
    const uint slice = phase == 1u ? wi / blocks : 0u;
    if (phase == 1u && slice >= n_slices)
        return;
    uint k0 = 0u, k1 = len;
    if (phase == 1u) {
        k0 = slice * slice_items;
        k1 = min(k1, k0 + slice_items);
    }
    for (uint t0 = 0u; t0 < p.n; t0 += TILE) {
        uint tn = min(TILE, p.n - t0);
        float acc[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] = j < tn && phase != 1u ? y[p.c_off + (t0 + j) * p.cols + c] : 0.0;
        if (phase == 2u) {
            for (uint s = 0u; s < n_slices; s++)
                [[unroll]] for (uint j = 0u; j < TILE; j++)
                    if (j < tn)
                        acc[j] += part[p.d_off + (s * p.n + t0 + j) * p.cols + c];
        } else {
            for (uint k = k0; k < k1; k++) {
                uint r = uint(idx[p.b_off + k]);
                if (r < p.row_lo || r >= p.row_hi)
                    continue; /* out of range: skipped */
                uint win, base;
                locate_row(r, win, base);
                float w = load_weight(win, base, c);
                [[unroll]] for (uint j = 0u; j < TILE; j++)
                    if (j < tn)
                        acc[j] += h[p.a_off + (t0 + j) * p.rows + r] * w;
            }
        }
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            if (j < tn) {
                if (phase == 1u)
                    part[p.d_off + (slice * p.n + t0 + j) * p.cols + c] = acc[j];
                else
                    y[p.c_off + (t0 + j) * p.cols + c] = acc[j];
            }
    }
}
