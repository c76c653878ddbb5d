/*
 * The one place the kernels name a GPU vendor: the kernel sources
 * (kernels_*.cu) are written once over this header and compiled by nvcc
 * for CUDA and by hipcc for AMD (plugins/rocm).  tests/gpu_sources.sh
 * fails when a kernel file names a vendor's intrinsic or runtime itself,
 * or assumes a warp of 32 lanes.  The host C files' twin is gpu_runtime.h.
 *
 *  - HC_WARP: lanes of a warp (CUDA: 32) or wavefront (AMD: 64 on GCN and
 *    CDNA, 32 on RDNA), from the target being compiled.  hipcc compiles
 *    every --offload-arch in one invocation, so it cannot be one -D: on
 *    HIP it is the device pass's __AMDGCN_WAVEFRONT_SIZE, and in the host
 *    pass a __device__-only constant, so host code that used it (a launch
 *    shape, a shared-memory size) would not compile.  Launch shapes are
 *    whole-block constants that every width divides.
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

#ifdef HC_WARP
#error "HC_WARP comes from the target (gpu_vendor.h), not from the command line"
#endif

#if defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#if defined(__HIP_DEVICE_COMPILE__)
#define HC_WARP __AMDGCN_WAVEFRONT_SIZE
#else
/* The host pass parses the kernels (so HC_WARP needs a value there) but
 * never runs them; a host function reading this fails to compile. */
static __device__ constexpr int hc_warp_is_device_only(void)
{
    return 64;
}
#define HC_WARP hc_warp_is_device_only()
#endif
typedef hipStream_t hc_gpu_stream;
typedef hipError_t hc_gpu_error;
#define hc_gpu_last_error() hipGetLastError()
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define HC_WARP 32
typedef cudaStream_t hc_gpu_stream;
typedef cudaError_t hc_gpu_error;
#define hc_gpu_last_error() cudaGetLastError()
#endif

static_assert(HC_WARP == 32 || HC_WARP == 64, "HC_WARP is a warp (32) or a wavefront (64)");

#if defined(__HIPCC__)

static __device__ __forceinline__ float hc_shfl_xor(float v, int lane_mask)
{
    return __shfl_xor(v, lane_mask, HC_WARP);
}

/* Bit i set when lane i's pred is true; every lane of the group must call it. */
static __device__ __forceinline__ uint64_t hc_ballot(bool pred)
{
    return (uint64_t)__ballot(pred ? 1 : 0);
}

/* v of lane (this lane - delta); lanes below delta get their own v. */
static __device__ __forceinline__ int32_t hc_shfl_up_int(int32_t v, unsigned delta)
{
    return __shfl_up(v, delta, HC_WARP);
}

#else /* CUDA */

static __device__ __forceinline__ float hc_shfl_xor(float v, int lane_mask)
{
    return __shfl_xor_sync(0xffffffffu, v, lane_mask, HC_WARP);
}

static __device__ __forceinline__ uint64_t hc_ballot(bool pred)
{
    return (uint64_t)__ballot_sync(0xffffffffu, pred ? 1 : 0);
}

static __device__ __forceinline__ int32_t hc_shfl_up_int(int32_t v, unsigned delta)
{
    return __shfl_up_sync(0xffffffffu, v, delta, HC_WARP);
}

#endif

static __device__ __forceinline__ float hc_half_bits_to_float(uint16_t bits)
{
    return __half2float(__ushort_as_half(bits));
}

#endif /* HC_GPU_VENDOR_H */
