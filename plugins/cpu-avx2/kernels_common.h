/*
 * Helpers shared by the kernel files (kernels_*.c) only.  The avx2 variant
 * builds those files with -mavx2 -mfma -mf16c and HC_CPU_KERNELS_AVX2; the
 * generic variant builds them plain and takes the scalar paths.
 *
 * Scalar code that must agree bit for bit with a vector lane uses HC_FMAF:
 * a fused multiply-add where the vector code uses one (avx2), a plain
 * multiply and add where it does not (generic: no FMA unit assumed, and a
 * software fmaf would be very slow).
 */
#ifndef HC_CPU_KERNELS_COMMON_H
#define HC_CPU_KERNELS_COMMON_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_kernels.h"

#if defined(HC_CPU_KERNELS_AVX2)
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "the avx2 kernels must be built with -mavx2 -mfma -mf16c"
#endif
#include <immintrin.h>
#define HC_FMAF(a, b, c) fmaf((a), (b), (c))
#else
#define HC_FMAF(a, b, c) ((a) * (b) + (c))
#endif

#define HC_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Unrolls the row (and token) loops of a tile, whose trip counts are
 * constants: GCC's size limits otherwise keep the 4-row Q4_0 loop rolled,
 * with the accumulators in memory (a store and a reload per row and step)
 * and about 25% more time per block in cache (1.07 against 0.85 ns). */
#define HC_UNROLL _Pragma("GCC unroll 8")

/* fp16 -> fp32 for every bit pattern, filled by hc_cpu_kernels_init().  A
 * lookup is cheaper than F16C for the one scale per block. */
extern float hc_cpu_f16_table[65536];

static inline uint16_t hc_load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float hc_f16(const uint8_t *p)
{
    return hc_cpu_f16_table[hc_load_u16(p)];
}

/* Software prefetch of the rows a later tile or group reads, requested
 * while the current one computes, at the pace the current loop reads its
 * own rows (which are as long): the step that reads bytes [off, off + step)
 * of its rows requests the same lines of pf's rows (relative to their
 * starts).  Into L2 (locality 1, which measured best: each weight is read
 * once).  The line to request follows from the step's offset alone: an
 * earlier cursor over (row, line), carried from step to step through memory,
 * cost 15-25% of an in-cache Q4_0 dot. */
typedef struct hc_prefetch {
    const uint8_t *p[8]; /* start of (this thread's part of) each row */
    int n;               /* rows; 0: nothing to request */
} hc_prefetch;

HC_ALWAYS_INLINE void hc_prefetch_lines(const hc_prefetch *pf, uint64_t off, uint64_t step)
{
    for (uint64_t line = (off + 63) & ~(uint64_t)63; line < off + step; line += 64)
        for (int i = 0; i < pf->n; i++)
            __builtin_prefetch(pf->p[i] + line, 0, 1);
}

/* The one-token Q4_0 axpy (axpy1_q4 in kernels_axpy.c, and its AVX-512
 * build in kernels_axpy_avx512.c, which must agree with it bit for bit):
 * rows are added HC_AXPY_GROUP at a time, the rows HC_AXPY_PF_GROUPS
 * groups ahead are prefetched, weights decode to 2 + q/64 and the row
 * multiplier is HC_AXPY_Q4_SCALE * h * d, so each group subtracts
 * HC_AXPY_Q4_OFFSET times the sum of its multipliers. */
#define HC_AXPY_GROUP 8
#define HC_AXPY_PF_GROUPS 2
#define HC_AXPY_Q4_SCALE 64.0f
#define HC_AXPY_Q4_OFFSET (136.0f / 64.0f)
/* Blocks a group call covers at most (its scales are staged in L1). */
#define HC_AXPY_Q4_CHUNK 64
#if defined(HC_CPU_HAVE_AVX512) || defined(__AVX512F__)
/* The AVX-512 group step: g rows (w[i] at the chunk's first block, h64[i] =
 * 64 * h) added into blocks [0, nb) of y, columns in natural order, exactly
 * as axpy1_q4's AVX2 group step adds them in its decode order. */
void hc_cpu_axpy_q4_group_avx512(int g, const uint8_t *const *w, const float *h64, float *y,
                                 int nb, hc_prefetch *pf);
#endif

/* Quantized x for Q4_0 weights: two blocks (A = 2p, B = 2p+1) per record,
 * laid out for the dot kernel: lo = elements 0..15 of A then of B, hi =
 * elements 16..31 of A then of B (the GGUF nibble order), ncorr = -8 x the
 * sum of the x values each int32 lane of the kernel covers (so the kernel can
 * use unsigned nibbles and add the -8 offset back; negated so that VNNI can
 * start its accumulator there), d = scales
 * (A in lanes 0-3, B in 4-7).  A missing B block is all zero. */
typedef struct hc_xq4_pair {
    int8_t lo[32];
    int8_t hi[32];
    int32_t ncorr[8];
    float d[8];
} hc_xq4_pair;

/* Quantized x for Q8_0 weights, per token: int16 q[nb][32] (16-bit x), then the scales
 * as float d[nb][8] (each repeated 8 times: the kernel multiplies by a
 * vector from memory instead of broadcasting in a register, which would
 * load the shuffle port the sign extensions already use). */

/* Quantized x for Q6_K weights, one record per 256-element super-block of
 * a token: q = the 8 blocks of 32 quantized as for Q4_0 (element order),
 * d = their scales, bsum[j] = the sum of q over elements 16j..16j+15 (the
 * kernel multiplies unsigned 6-bit weights and adds their -32 offset back
 * as -32 * scale[j] * bsum[j]).  320 bytes: records stay 32-aligned. */
typedef struct hc_xq6_block {
    int8_t q[256];
    float d[8];
    int16_t bsum[16];
} hc_xq6_block;
_Static_assert(sizeof(hc_xq6_block) == 320, "hc_xq6_block records must stay 32-aligned");

#if defined(HC_CPU_KERNELS_AVX2)
/* Horizontal sum in one fixed order. */
HC_ALWAYS_INLINE float hc_hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

HC_ALWAYS_INLINE float hc_hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* e^x, ~2 ulp (Cephes' expf polynomial).  Inputs are clamped to the finite
 * range; NaN propagates. */
HC_ALWAYS_INLINE __m256 hc_exp8(__m256 x)
{
    const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-88.0f);
    x = _mm256_min_ps(hi, x); /* operand order keeps NaN */
    x = _mm256_max_ps(lo, x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
    /* 2^n by building the exponent; n = -127 gives 0 (underflow). */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

/* n < 8 floats into a zero-padded vector and back: tails take the vector
 * path too, so an element's result never depends on where a split fell. */
HC_ALWAYS_INLINE __m256 hc_load_tail(const float *p, int64_t n)
{
    float t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof(float));
    return _mm256_loadu_ps(t);
}

HC_ALWAYS_INLINE void hc_store_tail(float *p, __m256 v, int64_t n)
{
    float t[8];
    _mm256_storeu_ps(t, v);
    memcpy(p, t, (size_t)n * sizeof(float));
}
#endif

#endif /* HC_CPU_KERNELS_COMMON_H */
