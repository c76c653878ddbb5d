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
 *  - HC_EMULATE_WAVE64 (CUDA only; -DHC_CUDA_EMULATE_WAVE64=ON): HC_WARP
 *    is 64, each wavefront being two 32-lane warps that exchange through
 *    shared memory (below), so the wave64 paths of the kernels (64-bit
 *    ballots, 64-lane scans and butterflies, warps per block) run on an
 *    NVIDIA GPU.  Slow; for the conformance suite only.
 *  - hc_wave_setup(): the first statement of every kernel that uses the
 *    cross-lane calls below (empty but in the emulation).
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
#if defined(HC_EMULATE_WAVE64)
#define HC_WARP 64
#else
#define HC_WARP 32
#endif
typedef cudaStream_t hc_gpu_stream;
typedef cudaError_t hc_gpu_error;
#define hc_gpu_last_error() cudaGetLastError()
#endif

static_assert(HC_WARP == 32 || HC_WARP == 64, "HC_WARP is a warp (32) or a wavefront (64)");

#if defined(__HIPCC__)

static __device__ __forceinline__ void hc_wave_setup(void) {}

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

#elif !defined(HC_EMULATE_WAVE64)

static __device__ __forceinline__ void hc_wave_setup(void) {}

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

#else /* CUDA, wave64 emulated */

/* Wavefront w of a block is warps 2w and 2w + 1 (threads 64w .. 64w + 63:
 * blocks are one-dimensional and whole wavefronts).  A cross-lane call
 * writes each lane's value to its warp's slots, meets the other warp of
 * the pair, reads the lane it wants, and meets it again before the slots
 * are reused.  The meeting is a counter per warp in shared memory: a warp
 * bumps its own and waits until its partner's has caught up (warps of a
 * block are all resident, so the wait ends).  Both warps of a wavefront
 * take the same path through a kernel, as the lanes of a real one do. */
#define HC_EM_WARPS 32 /* 1024 threads per block at most */

struct hc_em_state {
    uint64_t slot[HC_EM_WARPS][32];
    volatile unsigned met[HC_EM_WARPS];
};

static __device__ __forceinline__ hc_em_state &hc_em(void)
{
    __shared__ hc_em_state s;
    return s;
}

static __device__ __forceinline__ void hc_wave_setup(void)
{
    for (unsigned i = threadIdx.x; i < HC_EM_WARPS; i += blockDim.x)
        hc_em().met[i] = 0;
    __syncthreads();
}

static __device__ __forceinline__ void hc_em_meet(void)
{
    volatile unsigned *met = hc_em().met;
    const unsigned w = threadIdx.x / 32;
    __syncwarp(); /* the warp's slot writes before lane 0's fence */
    if (threadIdx.x % 32 == 0) {
        __threadfence_block();
        const unsigned mine = met[w] + 1;
        met[w] = mine;
        while ((int)(met[w ^ 1] - mine) < 0) {
        }
        __threadfence_block();
    }
    __syncwarp();
}

/* v of lane `src` (0 .. 63) of this thread's wavefront. */
static __device__ __forceinline__ uint64_t hc_em_read(uint64_t v, unsigned src)
{
    hc_em_state &s = hc_em();
    const unsigned w = threadIdx.x / 32;
    s.slot[w][threadIdx.x % 32] = v;
    hc_em_meet();
    const uint64_t r = s.slot[(w & ~1u) + src / 32][src % 32];
    hc_em_meet();
    return r;
}

static __device__ __forceinline__ float hc_shfl_xor(float v, int lane_mask)
{
    const unsigned lane = threadIdx.x % HC_WARP;
    return __uint_as_float((uint32_t)hc_em_read(__float_as_uint(v), lane ^ (unsigned)lane_mask));
}

static __device__ __forceinline__ uint64_t hc_ballot(bool pred)
{
    const uint64_t half = __ballot_sync(0xffffffffu, pred ? 1 : 0);
    const unsigned lane = threadIdx.x % HC_WARP;
    const uint64_t other = hc_em_read(half, lane ^ 32u);
    return lane < 32 ? other << 32 | half : half << 32 | other;
}

static __device__ __forceinline__ int32_t hc_shfl_up_int(int32_t v, unsigned delta)
{
    const unsigned lane = threadIdx.x % HC_WARP;
    return (int32_t)(uint32_t)hc_em_read((uint32_t)v, lane >= delta ? lane - delta : lane);
}

#endif

static __device__ __forceinline__ float hc_half_bits_to_float(uint16_t bits)
{
    return __half2float(__ushort_as_half(bits));
}

#endif /* HC_GPU_VENDOR_H */
