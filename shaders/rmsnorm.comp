#version 450
/*
 * rmsnorm: y[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, one workgroup per
 * token.  Invocation i sums the squares of elements i, i + WG, ... in that
 * order and workgroup_all adds the partial sums in a fixed order, so the
 * result never depends on timing.  y may be x itself (each element is read
 * and written by the same invocation, after the reduction).
 *
 * Bindings: A = x (n x dim), B = w (dim), C = y (n x dim).  p.n tokens,
 * p.dim, p.f0 = eps.
 */
#define HC_LAYER_OP 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 3) buffer Y { float y[]; };

void main()
{
    uint t = work_item();
    if (t >= p.n)
        return; /* the whole workgroup: no barrier is skipped by part of it */
    uint tid = gl_LocalInvocationIndex;
    uint xb = p.a_off + t * p.dim, yb = p.c_off + t * p.dim;
    float ss = 0.0;
    for (uint c = tid; c < p.dim; c += WG) {
        float v = x[xb + c];
        ss += v * v;
    }
    ss = workgroup_all(ss, false);
    float inv = 1.0 / sqrt(ss / float(p.dim) + p.f0);
    for (uint c = tid; c < p.dim; c += WG)
        y[yb + c] = x[xb + c] * inv * w[p.b_off + c];
}
