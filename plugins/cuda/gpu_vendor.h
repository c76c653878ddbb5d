/*
 * The one place the kernels name a GPU vendor: the kernel sources
 * (kernels_*.cu) are written once over this header and compiled by nvcc
 * for CUDA and by hipcc for AMD.
 *
 *  - HC_WARP: lanes of a warp (CUDA: 32) or wavefront (AMD: 64 on GCN and
 *    CDNA, 32 on RDNA in wave32 mode).  A compile-time parameter
 *    (-DHC_WARP=...); no kernel assumes 32.
 *  - hc_shfl_xor: a butterfly shuffle over the whole HC_WARP-wide group,
 *    with its width and its lane mask spelled out (CUDA's _sync forms want
 *    the mask; HIP's take no mask and always use every lane).
 *  - hc_ballot, hc_shfl_up_int: the lanes' votes as one mask (bit i: lane
 *    i; 32 or 64 bits, always returned as 64) and an integer shuffle from
 *    `delta` lanes below, over the same HC_WARP-wide group.
 *  - hc_half_bits_to_float: an IEEE binary16 read as its 16 bits (weights
 *    are bytes in device memory, not __half values).
 */
#ifndef HC_GPU_VENDOR_H
#define HC_GPU_VENDOR_H

#include <stdint.h>

#if defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#ifndef HC_WARP
#define HC_WARP 64
#endif
typedef hipStream_t hc_gpu_stream;
typedef hipError_t hc_gpu_error;
#define hc_gpu_last_error() hipGetLastError()
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifndef HC_WARP
#define HC_WARP 32
#endif
static_assert(HC_WARP == 32, "a CUDA warp is 32 lanes");
typedef cudaStream_t hc_gpu_stream;
typedef cudaError_t hc_gpu_error;
#define hc_gpu_last_error() cudaGetLastError()
#endif

static_assert(HC_WARP == 32 || HC_WARP == 64, "HC_WARP is a warp (32) or a wavefront (64)");

/* Every lane of an HC_WARP-wide group. */
#if HC_WARP == 64
#define HC_LANES_ALL 0xffffffffffffffffull
#else
#define HC_LANES_ALL 0xffffffffu
#endif

static __device__ __forceinline__ float hc_shfl_xor(float v, int lane_mask)
{
#if defined(__HIPCC__)
    return __shfl_xor(v, lane_mask, HC_WARP);
#else
    return __shfl_xor_sync(HC_LANES_ALL, v, lane_mask, HC_WARP);
#endif
}

/* Bit i set when lane i's pred is true; every lane of the group must call it. */
static __device__ __forceinline__ uint64_t hc_ballot(bool pred)
{
#if defined(__HIPCC__)
    return (uint64_t)__ballot(pred ? 1 : 0);
#else
    return (uint64_t)__ballot_sync(HC_LANES_ALL, pred ? 1 : 0);
#endif
}

/* v of lane (this lane - delta); lanes below delta get their own v. */
static __device__ __forceinline__ int32_t hc_shfl_up_int(int32_t v, unsigned delta)
{
#if defined(__HIPCC__)
    return __shfl_up(v, delta, HC_WARP);
#else
    return __shfl_up_sync(HC_LANES_ALL, v, delta, HC_WARP);
#endif
}

static __device__ __forceinline__ float hc_half_bits_to_float(uint16_t bits)
{
    return __half2float(__ushort_as_half(bits));
}

#endif /* HC_GPU_VENDOR_H */
