#version 450
/*
 * axpy_rows: y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c], k in list order.
 *
 * Each invocation owns one column c of y for up to TILE tokens: it starts
 * from y, adds the listed rows' terms one after the other in list order,
 * and writes y back once.  No two invocations touch the same element and no
 * atomics are used, so the sum is the same on every run.  h is read only at
 * listed rows (unlisted entries may hold anything, even nan).
 *
 * Bindings: W = Wt (windows), A = h (n x rows F32), B = idx (int32),
 * C = y (n x cols F32).
 */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "weights.glsl"

layout(std430, set = 0, binding = 1) readonly buffer H { float h[]; };
layout(std430, set = 0, binding = 2) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 3) buffer Y { float y[]; };

void main()
{
    uint c = work_item() * WG + gl_LocalInvocationIndex;
    if (c >= p.cols)
        return; /* no barriers below: a partial workgroup is fine */
    for (uint t0 = 0u; t0 < p.n; t0 += TILE) {
        uint tn = min(TILE, p.n - t0);
        float acc[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] = j < tn ? y[p.c_off + (t0 + j) * p.cols + c] : 0.0;
        for (uint k = 0u; k < p.n_items; k++) {
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
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            if (j < tn)
                y[p.c_off + (t0 + j) * p.cols + c] = acc[j];
    }
}
