#version 450
/*
 * rope, in place: one invocation per rotated pair (token t, head h, i <
 * n_rot/2).  NORM rotates (x[2i], x[2i+1]), NEOX (x[i], x[i + n_rot/2]),
 * by theta = pos[t] * freq_scale * freq_base^(-2i/n_rot).
 *
 * Accuracy: log2(freq_base) comes from the host (computed in double), so
 * the frequency is one exp2; theta is then rounded once to float (the
 * error the conformance bound allows for), and reduced to [-pi, pi] with
 * a two-part 2*pi before cos/sin, whose precision Vulkan only promises in
 * that range.
 *
 * Bindings: A = x (n x n_head x head_dim), binding 0 window 0 = pos
 * (int32[n]).  p.n tokens, p.dim = head_dim, p.op = mode, p.f0 =
 * log2(freq_base), p.f1 = freq_scale.
 */
#define HC_LAYER_OP 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Aux { int v[]; } aux[HC_WINDOWS];
layout(std430, set = 0, binding = 1) buffer X { float x[]; };

/* 2*pi = TWO_PI_HI + TWO_PI_LO; TWO_PI_HI has 8 significant bits, so
 * k * TWO_PI_HI is exact for every |k| < 2^16 (angles up to ~4e5 rad). */
const float TWO_PI_HI = 6.28125;
const float TWO_PI_LO = 1.9353071795864769e-3;
const float INV_TWO_PI = 0.15915494309189535;

void main()
{
    uint half_rot = p.n_rot / 2u;
    uint gid = work_item() * WG + gl_LocalInvocationIndex;
    if (gid >= p.n * p.n_head * half_rot)
        return; /* no barriers: a partial workgroup is fine */
    uint i = gid % half_rot, th = gid / half_rot, t = th / p.n_head;
    float freq = exp2(-float(2u * i) / float(p.n_rot) * p.f0) * p.f1;
    float theta = float(aux[0].v[p.w0_off + t]) * freq;
    float k = round(theta * INV_TWO_PI);
    float r = fma(-k, TWO_PI_LO, fma(-k, TWO_PI_HI, theta));
    float c = cos(r), s = sin(r);
    uint base = p.a_off + th * p.dim;
    uint ia = base + (p.op == 2u ? i : 2u * i);
    uint ib = base + (p.op == 2u ? i + half_rot : 2u * i + 1u);
    float x0 = x[ia], x1 = x[ib];
    x[ia] = x0 * c - x1 * s;
    x[ib] = x0 * s + x1 * c;
}
