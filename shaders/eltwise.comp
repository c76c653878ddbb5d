#version 450
/*
 * The element-wise ops, one invocation per element (the variant's define
 * picks the op family, p.op the op):
 *   unary   y = relu_shift(x, p) | silu(x) | x * p       A = x, C = y
 *   binary  y = a + b | a * b                           A = a, B = b, C = y
 *   glu     h = act(g, u) with shift p                  A = g, B = u, C = h
 * p.n elements, p.f0 the parameter.  The output may be one of the inputs
 * (the same range: the core adds and gates in place): each element is read
 * and then written by the same invocation.
 */
#define HC_LAYER_OP 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(std430, set = 0, binding = 1) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 3) buffer Y { float y[]; };

float silu(float x)
{
    return x / (1.0 + exp(-x));
}

void main()
{
    uint i = work_item() * WG + gl_LocalInvocationIndex;
    if (i >= p.n)
        return; /* no barriers: a partial workgroup is fine */
    float x = a[p.a_off + i], r;
#if defined(HC_OP_UNARY)
    if (p.op == 0u)
        r = max(x - p.f0, 0.0);
    else if (p.op == 1u)
        r = silu(x);
    else
        r = x * p.f0;
#else
    float v = b[p.b_off + i];
#if defined(HC_OP_BINARY)
    r = p.op == 0u ? x + v : x * v;
#else /* HC_OP_GLU */
    if (p.op == 0u)
        r = silu(x) * v;
    else if (p.op == 1u)
        r = max(x - p.f0, 0.0) * v;
    else
        r = max(x - p.f0, 0.0) * max(v, 0.0);
#endif
#endif
    y[p.c_off + i] = r;
}
