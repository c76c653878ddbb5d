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
 * C = y (n x cols F32), D = partials (n_slices x n x cols F32).
 */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "weights.glsl"

layout(std430, set = 0, binding = 1) readonly buffer H { float h[]; };
layout(std430, set = 0, binding = 2) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 3) buffer Y { float y[]; };
layout(std430, set = 0, binding = 4) buffer D { float part[]; };

void main()
{
    const uint blocks = (p.cols + WG - 1u) / WG;
    const uint wi = work_item();
    const uint slice = p.phase == 1u ? wi / blocks : 0u;
    const uint c = (wi % blocks) * WG + gl_LocalInvocationIndex;
    if (c >= p.cols)
        return; /* no barriers below: a partial workgroup is fine */
    uint k0 = 0u, k1 = p.n_items;
    if (p.phase == 1u) {
        k0 = slice * p.slice_items;
        k1 = min(k1, k0 + p.slice_items);
    }
    for (uint t0 = 0u; t0 < p.n; t0 += TILE) {
        uint tn = min(TILE, p.n - t0);
        float acc[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] = j < tn && p.phase != 1u ? y[p.c_off + (t0 + j) * p.cols + c] : 0.0;
        if (p.phase == 2u) {
            for (uint s = 0u; s < p.n_slices; s++)
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
                if (p.phase == 1u)
                    part[p.d_off + (slice * p.n + t0 + j) * p.cols + c] = acc[j];
                else
                    y[p.c_off + (t0 + j) * p.cols + c] = acc[j];
            }
    }
}
