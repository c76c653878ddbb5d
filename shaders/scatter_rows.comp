#version 450
/*
 * scatter_rows (plugin.h): dst row pos[t] = src row t, copied as 32-bit
 * words, one invocation per word of a row; each destination word is
 * written by at most one invocation of a dispatch.
 *
 * A dispatch covers tokens [0, p.n) of a chunk and destination rows
 * [p.kv_lo, p.kv_hi), the ones its C binding holds (ops_scatter.c splits a
 * call whose source or destination exceeds one binding).  A position
 * outside those rows is skipped: another dispatch of the call covers it,
 * or it is outside [0, dst_rows) and copies nothing.  Should two tokens of
 * a dispatch name one row (plugin.h does not say), only the later one
 * writes it, as later chunks are later dispatches: the later token wins,
 * as on the CPU, and no two invocations race for a word.
 *
 * p.n = tokens, p.dim = words per row, p.n_head = workgroups per row;
 * A = src (row 0 of the chunk at a_off), B = pos (b_off), C = dst (row
 * kv_lo at c_off).
 */
#define HC_LAYER_OP 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(std430, set = 0, binding = 1) readonly buffer A { uint src[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { int pos[]; };
layout(std430, set = 0, binding = 3) buffer C { uint dst[]; };

void main()
{
    const uint g = work_item();
    const uint t = g / p.n_head;
    const uint w = (g % p.n_head) * WG + gl_LocalInvocationIndex;
    if (t >= p.n || w >= p.dim)
        return; /* no barriers: a partial workgroup is fine */
    const int r = pos[p.b_off + t];
    if (r < 0 || uint(r) < p.kv_lo || uint(r) >= p.kv_hi)
        return;
    for (uint u = t + 1u; u < p.n; u++)
        if (pos[p.b_off + u] == r)
            return; /* a later token writes this row */
    dst[p.c_off + (uint(r) - p.kv_lo) * p.dim + w] = src[p.a_off + t * p.dim + w];
}
