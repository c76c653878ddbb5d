#version 450
/*
 * Causal attention over the F32 KV cache: one workgroup per (token t, query
 * head h), over the positions [kv_lo, kv_hi) of this dispatch.
 *
 * Softmax, numerically stable and online: positions go in blocks of
 * ATT_BLK.  For each block the workgroup computes the scores into shared
 * memory (invocation i: positions i, i + WG, ..., each dot in order over
 * head_dim), takes their maximum m', rescales what it has so far by
 * exp(m - m'), adds exp(score - m') to the running sum, and every
 * invocation adds the weighted V rows, in position order, to the output
 * dimensions it owns (d = i, i + WG, ..., at most ATT_DPI of them).  All
 * reductions have a fixed order: the result does not depend on timing.
 *
 * A KV cache larger than one binding is split by the host into several
 * dispatches over position ranges (flags: 1 = first, 2 = last): between
 * them the unnormalized output stays in `out` and the running maximum and
 * sum in a scratch buffer (binding 0, window 1), 2 floats per (t, h).
 * A token whose position lies outside the cache (or is negative) gets nan.
 *
 * Bindings: A = q (n x n_head x head_dim), B = K rows from position kv_lo,
 * C = V rows from kv_lo (rows of n_head_kv x head_dim), D = out (like q),
 * binding 0 window 0 = pos (int32[n]), window 1 = scratch.  p.dim =
 * head_dim, p.f0 = scale.
 */
#define HC_LAYER_OP 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

/* Output dimensions per invocation: the host refuses head_dim > WG * ATT_DPI. */
#define ATT_DPI 32u
/* Positions per block (the scores kept in shared memory). */
#define ATT_BLK 128u

layout(std430, set = 0, binding = 0) buffer Aux { uint v[]; } aux[HC_WINDOWS];
layout(std430, set = 0, binding = 1) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 2) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 3) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 4) buffer O { float o[]; };

shared float sc[ATT_BLK];

void main()
{
    uint item = work_item();
    if (item >= p.n * p.n_head)
        return; /* the whole workgroup: no barrier is skipped by part of it */
    uint tid = gl_LocalInvocationIndex;
    uint t = item / p.n_head, h = item % p.n_head;
    uint hd = p.dim, kv_stride = p.n_head_kv * hd;
    uint kv_head = h / (p.n_head / p.n_head_kv);
    int pos = int(aux[0].v[p.w0_off + t]);
    bool bad = pos < 0 || uint(pos) >= p.kv_total;
    uint n_ctx = bad ? 0u : uint(pos) + 1u;
    uint lo = p.kv_lo, hi = min(p.kv_hi, n_ctx);
    bool first = (p.flags & 1u) != 0u, last = (p.flags & 2u) != 0u;
    if (lo >= hi && !last)
        return; /* nothing of this token here: its state stays as it is */
    uint qb = p.a_off + item * hd, ob = p.d_off + item * hd, sb = p.w1_off + item * 2u;
    const float NEG_INF = uintBitsToFloat(0xff800000u);

    float m = NEG_INF, l = 0.0;
    float acc[ATT_DPI];
    [[unroll]] for (uint i = 0u; i < ATT_DPI; i++) {
        uint d = tid + i * WG;
        acc[i] = !first && d < hd ? o[ob + d] : 0.0;
    }
    if (!first) {
        m = uintBitsToFloat(aux[1].v[sb]);
        l = uintBitsToFloat(aux[1].v[sb + 1u]);
    }
    for (uint p0 = lo; p0 < hi; p0 += ATT_BLK) {
        uint np = min(ATT_BLK, hi - p0);
        uint row0 = (p0 - p.kv_lo) * kv_stride + kv_head * hd;
        float bmax = NEG_INF;
        for (uint j = tid; j < np; j += WG) {
            uint kb = p.b_off + row0 + j * kv_stride;
            float s = 0.0;
            for (uint d = 0u; d < hd; d++)
                s += q[qb + d] * k[kb + d];
            s *= p.f0;
            sc[j] = s;
            bmax = max(bmax, s);
        }
        bmax = workgroup_all(bmax, true);
        float m_new = max(m, bmax);
        /* The first block has nothing to rescale (and -inf - -inf is nan). */
        float corr = m == NEG_INF ? 0.0 : exp(m - m_new);
        workgroup_sync_shared(); /* every score written before any is reused */
        float part = 0.0;
        for (uint j = tid; j < np; j += WG) {
            float e = exp(sc[j] - m_new);
            sc[j] = e;
            part += e;
        }
        l = l * corr + workgroup_all(part, false);
        workgroup_sync_shared();
        [[unroll]] for (uint i = 0u; i < ATT_DPI; i++) {
            uint d = tid + i * WG;
            if (d < hd) {
                uint vb = p.c_off + row0 + d;
                float a = acc[i] * corr;
                for (uint j = 0u; j < np; j++)
                    a += sc[j] * v[vb + j * kv_stride];
                acc[i] = a;
            }
        }
        m = m_new;
        workgroup_sync_shared(); /* the next block overwrites sc */
    }
    if (last) {
        /* No position at all (a bad pos): nan, so misuse shows. */
        const float NAN = uintBitsToFloat(0x7fc00000u);
        [[unroll]] for (uint i = 0u; i < ATT_DPI; i++) {
            uint d = tid + i * WG;
            if (d < hd)
                o[ob + d] = l > 0.0 ? acc[i] / l : NAN;
        }
    } else {
        [[unroll]] for (uint i = 0u; i < ATT_DPI; i++) {
            uint d = tid + i * WG;
            if (d < hd)
                o[ob + d] = acc[i];
        }
        if (tid == 0u) {
            aux[1].v[sb] = floatBitsToUint(m);
            aux[1].v[sb + 1u] = floatBitsToUint(l);
        }
    }
}
