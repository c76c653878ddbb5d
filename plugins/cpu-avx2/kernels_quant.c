/*
 * fp16 decoding and the per-call quantization of x.
 *
 * Q4_0, Q8_0 and Q6_K weights are multiplied by x quantized in blocks of 32
 * (one float scale per block; 8 bits for Q4_0's and Q6_K's maddubs, 16 bits
 * for Q8_0's madd), so the inner loop is integer multiply-adds instead of
 * converting every weight to float.
 * Each block of x is quantized by exactly one thread in a fixed way, so the
 * result is the same for any thread count.  The generic build multiplies
 * dequantized weights with float x and quantizes nothing.
 */
#include "kernels_common.h"

float hc_cpu_f16_table[65536];

/* IEEE binary16 -> binary32 by bit manipulation (exact for every input). */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;

    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf, NaN (payload kept) */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign; /* +-0 */
    } else {
        /* Subnormal half: normalise the mantissa. */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while ((man & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

void hc_cpu_kernels_init(void)
{
    for (uint32_t i = 0; i < 65536u; i++)
        hc_cpu_f16_table[i] = half_to_float((uint16_t)i);
}

size_t hc_cpu_xq_bytes(hc_type t, int64_t cols)
{
#if defined(HC_CPU_KERNELS_AVX2)
    size_t nb = (size_t)cols / 32;
    if (t == HC_TYPE_Q4_0)
        return (nb + 1) / 2 * sizeof(hc_xq4_pair);
    if (t == HC_TYPE_Q8_0)
        return nb * 64 + nb * 32;
    if (t == HC_TYPE_Q6_K)
        return (size_t)cols / 256 * sizeof(hc_xq6_block);
#else
    (void)t;
    (void)cols;
#endif
    return 0;
}

#if defined(HC_CPU_KERNELS_AVX2)
/* One block of 32: q = round(x * 127 / amax) in element order, d = amax / 127. */
static __m256i quantize_block(const float *x, float *d)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    float amax = hc_hmax8(m);
    __m256 s = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    *d = amax / 127.0f;
    /* cvtps rounds to nearest even; packs keep order within 128-bit lanes,
     * the final permute restores element order. */
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, s)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, s));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, s)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, s));
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* Sums of 4 consecutive q: lane j = q[4j] + ... + q[4j+3]. */
static __m256i sums_of_4(__m256i q)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
}

static void quantize_q4_token(const float *x, int64_t cols, hc_xq4_pair *out)
{
    const int64_t nb = cols / 32;
    for (int64_t b = 0; b < nb; b += 2) {
        hc_xq4_pair *r = &out[b / 2];
        float dA, dB = 0.0f;
        __m256i qA = quantize_block(x + b * 32, &dA);
        __m256i qB = b + 1 < nb ? quantize_block(x + (b + 1) * 32, &dB) : _mm256_setzero_si256();
        _mm256_store_si256((__m256i *)r->lo, _mm256_permute2x128_si256(qA, qB, 0x20));
        _mm256_store_si256((__m256i *)r->hi, _mm256_permute2x128_si256(qA, qB, 0x31));
        /* int32 lane j of the kernel covers elements 4j'..4j'+3 and
         * 16+4j'..16+4j'+3 of its block (j' = j mod 4). */
        __m256i sA = sums_of_4(qA), sB = sums_of_4(qB);
        __m256i corr = _mm256_add_epi32(_mm256_permute2x128_si256(sA, sB, 0x20),
                                        _mm256_permute2x128_si256(sA, sB, 0x31));
        _mm256_store_si256((__m256i *)r->ncorr,
                           _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 3)));
        _mm256_store_ps(r->d, _mm256_blend_ps(_mm256_set1_ps(dA), _mm256_set1_ps(dB), 0xf0));
    }
}

/* Q6_K: each block of 32 as for Q4_0, and the sums of 16 the kernel's
 * offset correction needs (exact: at most 16 * 127 in magnitude). */
static void quantize_q6_token(const float *x, int64_t cols, hc_xq6_block *out)
{
    for (int64_t s = 0; s < cols / 256; s++) {
        hc_xq6_block *r = &out[s];
        for (int b = 0; b < 8; b++)
            _mm256_store_si256((__m256i *)(r->q + 32 * b),
                               quantize_block(x + s * 256 + 32 * b, &r->d[b]));
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int i = 0; i < 16; i++)
                sum += r->q[16 * j + i];
            r->bsum[j] = (int16_t)sum;
        }
    }
}

/* Q8_0 weights are sign-extended to int16 in the kernel anyway, so x can
 * keep 16 bits at no cost: q = round(x * 32767 / amax).  madd sums stay
 * below 2 * 128 * 32767 per pair, far inside int32. */
static void quantize_q8_token(const float *x, int64_t cols, uint8_t *out)
{
    const int64_t nb = cols / 32;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int16_t *q16 = (int16_t *)out;
    float *dv = (float *)(out + nb * 64);
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * 32;
        __m256 v0 = _mm256_loadu_ps(xb), v1 = _mm256_loadu_ps(xb + 8);
        __m256 v2 = _mm256_loadu_ps(xb + 16), v3 = _mm256_loadu_ps(xb + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        float amax = hc_hmax8(m);
        __m256 s = _mm256_set1_ps(amax > 0.0f ? 32767.0f / amax : 0.0f);
        _mm256_store_ps(dv + 8 * b, _mm256_set1_ps(amax / 32767.0f));
        __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, s)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, s));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, s)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, s));
        /* packs works per 128-bit lane; the qword permute restores order. */
        __m256i p01 = _mm256_permute4x64_epi64(_mm256_packs_epi32(i0, i1), 0xd8);
        __m256i p23 = _mm256_permute4x64_epi64(_mm256_packs_epi32(i2, i3), 0xd8);
        _mm256_storeu_si256((__m256i *)(q16 + b * 32), p01);
        _mm256_storeu_si256((__m256i *)(q16 + b * 32 + 16), p23);
    }
}
#endif

void hc_cpu_quant_task(void *args, int ith, int nth)
{
    const hc_cpu_quant_args *a = args;
    int64_t t0, t1;

    hc_cpu_split(a->n, ith, nth, 1, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
#if defined(HC_CPU_KERNELS_AVX2)
        const float *x = a->x + t * a->cols;
        uint8_t *xq = a->xq + (size_t)t * a->xq_stride;
        if (a->type == HC_TYPE_Q4_0)
            quantize_q4_token(x, a->cols, (hc_xq4_pair *)xq);
        else if (a->type == HC_TYPE_Q8_0)
            quantize_q8_token(x, a->cols, xq);
        else if (a->type == HC_TYPE_Q6_K)
            quantize_q6_token(x, a->cols, (hc_xq6_block *)xq);
#else
        (void)t;
#endif
    }
}
