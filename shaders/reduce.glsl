/*
 * Sums acc[0..TILE) over the workgroup in a fixed order: the result depends
 * only on the workgroup size and the device, never on timing.  Afterwards
 * invocation 0 holds the totals (others hold partial values).  Every
 * invocation of the workgroup must call it (it contains barriers).
 */
shared float red_buf[TILE * gl_WorkGroupSize.x];

void workgroup_sum(inout float acc[TILE])
{
    uint tid = gl_LocalInvocationIndex;
#if defined(HC_FEAT_SUBGROUP)
    [[unroll]] for (uint j = 0u; j < TILE; j++)
        acc[j] = subgroupAdd(acc[j]);
    if (SINGLE_SUBGROUP || gl_NumSubgroups == 1u)
        return;
    if (gl_SubgroupInvocationID == 0u)
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            red_buf[gl_SubgroupID * TILE + j] = acc[j];
    barrier();
    if (tid == 0u)
        [[unroll]] for (uint j = 0u; j < TILE; j++) {
            float s = 0.0;
            for (uint g = 0u; g < gl_NumSubgroups; g++)
                s += red_buf[g * TILE + j];
            acc[j] = s;
        }
    barrier(); /* red_buf is reused by the next call */
#else
    [[unroll]] for (uint j = 0u; j < TILE; j++)
        red_buf[tid * TILE + j] = acc[j];
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s)
            [[unroll]] for (uint j = 0u; j < TILE; j++)
                red_buf[tid * TILE + j] += red_buf[(tid + s) * TILE + j];
        barrier();
    }
    if (tid == 0u)
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            acc[j] = red_buf[j];
    barrier();
#endif
}

/*
 * The sum (is_max false) or maximum (is_max true) of v over the workgroup,
 * the same value in every invocation: each one combines the partial
 * results in the same fixed order.  Every invocation must call it.
 */
float workgroup_all(float v, bool is_max)
{
    uint tid = gl_LocalInvocationIndex;
#if defined(HC_FEAT_SUBGROUP)
    v = is_max ? subgroupMax(v) : subgroupAdd(v);
    if (SINGLE_SUBGROUP || gl_NumSubgroups == 1u)
        return v;
    if (gl_SubgroupInvocationID == 0u)
        red_buf[gl_SubgroupID] = v;
    barrier();
    float r = red_buf[0];
    for (uint g = 1u; g < gl_NumSubgroups; g++)
        r = is_max ? max(r, red_buf[g]) : r + red_buf[g];
    barrier(); /* red_buf is reused by the next call */
    return r;
#else
    red_buf[tid] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s)
            red_buf[tid] = is_max ? max(red_buf[tid], red_buf[tid + s])
                                  : red_buf[tid] + red_buf[tid + s];
        barrier();
    }
    float r = red_buf[0];
    barrier();
    return r;
#endif
}

/* Makes this workgroup's shared-memory writes visible to all of it.  A
 * workgroup that is one subgroup needs only a subgroup barrier (on lavapipe
 * a full barrier turns the invocations into coroutines). */
void workgroup_sync_shared()
{
#if defined(HC_FEAT_SUBGROUP)
    if (SINGLE_SUBGROUP) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        return;
    }
#endif
    barrier();
}
