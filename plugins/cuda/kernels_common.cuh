/*
 * What the weight kernels share: reading one weight element or one block of
 * a GGUF row (the layouts of plugin.h; core/ref/ref_quant.c is the
 * reference decoding), and a block-wide sum in a fixed order.
 *
 * Determinism: a thread's partial sum covers a fixed set of elements in a
 * fixed order (it depends on the thread's index and the block size only,
 * both compile-time here), the lanes of a warp combine by a butterfly of
 * fixed shape, and the warps' sums are added by one thread in warp order.
 * No atomics: the same input gives the same bits on every run.
 */
#ifndef HC_CUDA_KERNELS_COMMON_CUH
#define HC_CUDA_KERNELS_COMMON_CUH

#include "gpu_vendor.h"
#include "hotcold/plugin.h"

/* The fp16 at p (any alignment: quantized rows are byte-addressed). */
static __device__ __forceinline__ float hc_load_half(const uint8_t *p)
{
    return hc_half_bits_to_float((uint16_t)(p[0] | (p[1] << 8)));
}

/* Element c of a row of type T. */
template <int T> static __device__ __forceinline__ float hc_weight_at(const uint8_t *row, int64_t c);

template <> __device__ __forceinline__ float hc_weight_at<HC_TYPE_F32>(const uint8_t *row, int64_t c)
{
    return reinterpret_cast<const float *>(row)[c];
}

template <> __device__ __forceinline__ float hc_weight_at<HC_TYPE_F16>(const uint8_t *row, int64_t c)
{
    return hc_half_bits_to_float(reinterpret_cast<const uint16_t *>(row)[c]);
}

/* Q8_0: blocks of 32, fp16 d then 32 int8; x = d * q. */
template <> __device__ __forceinline__ float hc_weight_at<HC_TYPE_Q8_0>(const uint8_t *row, int64_t c)
{
    const uint8_t *b = row + (c / HC_QK8_0) * HC_Q8_0_BLOCK_BYTES;
    return hc_load_half(b) * (float)(int8_t)b[2 + c % HC_QK8_0];
}

/* Q4_0: blocks of 32, fp16 d then 16 bytes; byte j holds element j in its
 * low nibble and element j + 16 in its high nibble; x = d * (q - 8). */
template <> __device__ __forceinline__ float hc_weight_at<HC_TYPE_Q4_0>(const uint8_t *row, int64_t c)
{
    const uint8_t *b = row + (c / HC_QK4_0) * HC_Q4_0_BLOCK_BYTES;
    int j = (int)(c % HC_QK4_0);
    int q = j < 16 ? (b[2 + j] & 0x0f) : (b[2 + j - 16] >> 4);
    return hc_load_half(b) * (float)(q - 8);
}

/* Sum of v over the HC_WARP lanes of a warp; every lane gets the sum. */
static __device__ __forceinline__ float hc_warp_sum(float v)
{
    for (int m = HC_WARP / 2; m > 0; m /= 2)
        v += hc_shfl_xor(v, m);
    return v;
}

#endif /* HC_CUDA_KERNELS_COMMON_CUH */
