#version 450
/*
 * select_rows (plugin.h): the rows whose score passes the cut for some
 * token, in ascending order, and how many they are.
 *
 * One workgroup.  Invocation i owns chunk i of the rows (ceil(n_rows / WG)
 * consecutive rows): it counts its active rows, invocation 0 turns the
 * counts into offsets (a serial prefix sum, WG additions of integers), and
 * every invocation then writes its rows from its offset on.  The list and
 * the count depend on the scores alone, never on timing.  A decode layer has
 * a few thousand rows, a microsecond of work: one workgroup saves a second
 * pass over the grid.
 *
 * p.n = n_rows, p.dim = n_tok, p.flags bit 0: map bound, p.f0 = cut.
 * Bindings: A = scores (n_tok x n_rows F32), B = map (int32[n_rows]),
 * C = idx (int32[n_rows]), D = count (one int32).
 */
#define HC_LAYER_OP 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(std430, set = 0, binding = 1) readonly buffer A { float sc[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { int map[]; };
layout(std430, set = 0, binding = 3) buffer C { int idx[]; };
layout(std430, set = 0, binding = 4) buffer D { int cnt[]; };

shared uint offs[gl_WorkGroupSize.x];

/* Row r's list entry, or -1 when it is off (or mapped away: another
 * device's row).  A nan score is never >= the cut. */
int entry(uint r)
{
    bool on = false;
    for (uint t = 0u; t < p.dim && !on; t++)
        on = sc[p.a_off + t * p.n + r] >= p.f0;
    if (!on)
        return -1;
    return (p.flags & 1u) != 0u ? map[p.b_off + r] : int(r);
}

void main()
{
    const uint tid = gl_LocalInvocationIndex;
    const uint chunk = (p.n + WG - 1u) / WG;
    const uint r0 = min(tid * chunk, p.n), r1 = min(r0 + chunk, p.n);
    uint k = 0u;
    for (uint r = r0; r < r1; r++)
        k += entry(r) >= 0 ? 1u : 0u;
    offs[tid] = k;
    barrier();
    if (tid == 0u) {
        uint sum = 0u;
        for (uint i = 0u; i < WG; i++) {
            uint c = offs[i];
            offs[i] = sum;
            sum += c;
        }
        cnt[p.d_off] = int(sum);
    }
    barrier();
    uint o = offs[tid];
    for (uint r = r0; r < r1; r++) {
        int v = entry(r);
        if (v >= 0)
            idx[p.c_off + o++] = v;
    }
}
