#version 450
/*
 * matmul and matvec_rows: y[t][r] = sum_c W[r][c] * x[t][c].
 *
 * One workgroup per output row r (matmul: every row of the dispatch's range;
 * matvec_rows: the row of one list entry).  Invocation i takes columns (or,
 * for quantized types, 32-element blocks; Q6_K: 16-element groups) i,
 * i + WG, i + 2 WG, ... in that order, for up to TILE tokens at once; workgroup_sum then adds the partial
 * sums in a fixed tree.  Every y element is written by one invocation, once:
 * the result does not depend on scheduling, and rows not served by this
 * dispatch (or not listed) are never touched.
 *
 * Bindings: W = weights (windows), A = x (n x cols F32), B = idx (int32,
 * matvec_rows), C = y (n x rows F32), E = the list length (counted).
 */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "weights.glsl"
#include "reduce.glsl"

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 3) buffer Y { float y[]; };

/* Adds this invocation's share of W[row at base] . x[t0 + j] to acc[j]. */
void row_partial(uint win, uint base, uint t0, uint tn, inout float acc[TILE])
{
    uint tid = gl_LocalInvocationIndex;
    uint xb = p.a_off + t0 * p.cols;
#if defined(HC_WTYPE_F32) || defined(HC_WTYPE_F16)
    for (uint c = tid; c < p.cols; c += WG) {
        float w = load_weight(win, base, c);
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            if (j < tn)
                acc[j] += w * x[xb + j * p.cols + c];
    }
#elif defined(HC_WTYPE_Q8_0)
    uint nb = p.cols >> 5;
    for (uint b = tid; b < nb; b += WG) {
        uint blk = base + b * 34u;
        float s[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            s[j] = 0.0;
        for (uint i = 0u; i < 32u; i++) {
            float q = float(load_i8(win, blk + 2u + i));
            [[unroll]] for (uint j = 0u; j < TILE; j++)
                if (j < tn)
                    s[j] += q * x[xb + j * p.cols + b * 32u + i];
        }
        float d = load_half_unaligned(win, blk);
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] += d * s[j];
    }
#elif defined(HC_WTYPE_Q4_0)
    uint nb = p.cols >> 5;
    for (uint b = tid; b < nb; b += WG) {
        uint blk = base + b * 18u;
        float s[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            s[j] = 0.0;
        for (uint i = 0u; i < 16u; i++) {
            uint v = load_u8(win, blk + 2u + i);
            float lo = float(int(v & 15u) - 8);
            float hi = float(int(v >> 4) - 8);
            [[unroll]] for (uint j = 0u; j < TILE; j++)
                if (j < tn) {
                    uint xi = xb + j * p.cols + b * 32u + i;
                    s[j] += lo * x[xi] + hi * x[xi + 16u];
                }
        }
        float d = load_half_unaligned(win, blk);
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] += d * s[j];
    }
#elif defined(HC_WTYPE_Q6_K)
    /* Work unit: a group of 16 elements (one int8 scale).  Group gi is
     * group j = gi & 15 of super-block gi >> 4: elements 16 j .. 16 j + 15,
     * i.e. half h = j >> 3, quarter g = (j >> 1) & 3, columns l from
     * 16 (j & 1) (bit placement in plugin.h). */
    uint ng = p.cols >> 4;
    for (uint gi = tid; gi < ng; gi += WG) {
        uint blk = base + (gi >> 4) * 210u, j = gi & 15u;
        uint h = j >> 3, g = (j >> 1) & 3u, l0 = (j & 1u) * 16u;
        uint ql = blk + 64u * h + 32u * (g & 1u) + l0, qh = blk + 128u + 32u * h + l0;
        uint lo_shift = g < 2u ? 0u : 4u, hi_shift = 2u * g;
        uint xc = xb + gi * 16u;
        float s[TILE];
        [[unroll]] for (uint t = 0u; t < TILE; t++)
            s[t] = 0.0;
        for (uint i = 0u; i < 16u; i++) {
            uint q = ((load_u8(win, ql + i) >> lo_shift) & 15u) |
                     (((load_u8(win, qh + i) >> hi_shift) & 3u) << 4);
            float w = float(int(q) - 32);
            [[unroll]] for (uint t = 0u; t < TILE; t++)
                if (t < tn)
                    s[t] += w * x[xc + t * p.cols + i];
        }
        float ds = load_half_unaligned(win, blk + 208u) * float(load_i8(win, blk + 192u + j));
        [[unroll]] for (uint t = 0u; t < TILE; t++)
            acc[t] += ds * s[t];
    }
#endif
}

void main()
{
    uint item = work_item();
#if defined(HC_OP_MATVEC_ROWS)
    if (item >= list_length())
#else
    if (item >= p.n_items)
#endif
        return; /* the whole workgroup: no barrier is skipped by part of it */
#if defined(HC_OP_MATVEC_ROWS)
    uint r = uint(idx[p.b_off + item]); /* negative entries wrap high and are skipped */
    if (r < p.row_lo || r >= p.row_hi)
        return; /* another dispatch serves it, or out of range */
#else
    uint r = p.row_lo + item;
#endif
    uint win, base;
    locate_row(r, win, base);
    for (uint t0 = 0u; t0 < p.n; t0 += TILE) {
        uint tn = min(TILE, p.n - t0);
        float acc[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] = 0.0;
        row_partial(win, base, t0, tn, acc);
        workgroup_sum(acc);
        if (gl_LocalInvocationIndex == 0u)
            [[unroll]] for (uint j = 0u; j < TILE; j++)
                if (j < tn)
                    y[p.c_off + (t0 + j) * p.rows + r] = acc[j];
    }
}
