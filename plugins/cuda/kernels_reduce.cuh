/*
 * Block-wide reductions in a fixed order, for the layer kernels: each warp
 * (wavefront) combines its lanes by a butterfly of fixed shape
 * (kernels_common.cuh's hc_warp_sum, hc_warp_max below), then every thread
 * adds (or takes the maximum of) the warps' results in warp order, so every
 * thread gets the same bits, on every run.  No atomics.
 *
 * Every thread of the block must call them (they contain barriers); `part`
 * is shared memory of at least THREADS / HC_WARP floats, free for reuse
 * when the call returns.
 */
#ifndef HC_CUDA_KERNELS_REDUCE_CUH
#define HC_CUDA_KERNELS_REDUCE_CUH

#include "kernels_common.cuh"

/* Maximum of v over the HC_WARP lanes; every lane gets it.  fmaxf ignores
 * a nan operand, and the maximum is exact, so any order gives the same. */
static __device__ __forceinline__ float hc_warp_max(float v)
{
    for (int m = HC_WARP / 2; m > 0; m /= 2)
        v = fmaxf(v, hc_shfl_xor(v, m));
    return v;
}

template <int THREADS> static __device__ __forceinline__ float hc_block_sum(float v, float *part)
{
    static_assert(THREADS % HC_WARP == 0, "a block is whole warps");
    constexpr int WARPS = THREADS / HC_WARP;
    v = hc_warp_sum(v);
    if (threadIdx.x % HC_WARP == 0)
        part[threadIdx.x / HC_WARP] = v;
    __syncthreads();
    float s = part[0];
    for (int w = 1; w < WARPS; w++)
        s += part[w];
    __syncthreads(); /* part is reused by the next call */
    return s;
}

template <int THREADS> static __device__ __forceinline__ float hc_block_max(float v, float *part)
{
    static_assert(THREADS % HC_WARP == 0, "a block is whole warps");
    constexpr int WARPS = THREADS / HC_WARP;
    v = hc_warp_max(v);
    if (threadIdx.x % HC_WARP == 0)
        part[threadIdx.x / HC_WARP] = v;
    __syncthreads();
    float s = part[0];
    for (int w = 1; w < WARPS; w++)
        s = fmaxf(s, part[w]);
    __syncthreads();
    return s;
}

#endif /* HC_CUDA_KERNELS_REDUCE_CUH */
