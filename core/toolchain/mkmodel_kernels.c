/*
 * mkmodel_kernels.h: the generator's quantizers and calibration dots.
 *
 * Why they give core/ref's exact bits (x86-64; elsewhere they call core/ref):
 * - Q4_0: the block's signed maximum is the first element of largest
 *   magnitude, as ref's strict '>' scan picks (an all-zero block keeps +0);
 *   then floor(x/d + 8.5) clamped to 0..15.  For finite v, trunc and floor
 *   differ only on negative non-integers, which both clamp to 0, so
 *   truncating the clamped value is the same.
 * - Q8_0: roundf(y) (half away from zero) is trunc(y) plus the sign of y
 *   where |y - trunc(y)| >= 0.5; y - trunc(y) is exact below 2^23, and
 *   |y| <= 127 * 2 here (|x| <= amax, d = amax / 127).
 * - F16: F16C's conversion rounds to nearest even, as ref's does; ref's
 *   own bit routine is used without F16C.
 * - Every lane does ref's IEEE operations in ref's order (the core builds
 *   with floating-point contraction off), so SSE2 and AVX agree.
 */
#include "mkmodel_kernels.h"

#include <math.h>
#include <string.h>

#include "ref/ref.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HC_MK_X86 1
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#endif

#ifdef HC_MK_X86
/* ---- quantizers (SSE2, the x86-64 baseline) -------------------------------- */
static float hmax4(__m128 m)
{
    float l[4];
    _mm_storeu_ps(l, m);
    float a = l[0] > l[1] ? l[0] : l[1], b = l[2] > l[3] ? l[2] : l[3];
    return a > b ? a : b;
}

static float block_amax(const float *x, int n)
{
    const __m128 mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 m = _mm_setzero_ps();
    for (int k = 0; k < n; k += 4)
        m = _mm_max_ps(m, _mm_and_ps(_mm_loadu_ps(x + k), mask));
    return hmax4(m);
}

static void quantize_q4_0(const float *src, uint8_t *row, int64_t cols)
{
    const __m128 half8 = _mm_set1_ps(8.5f), zero = _mm_setzero_ps(), top = _mm_set1_ps(15.0f);
    for (int64_t b = 0; b < cols / HC_QK4_0; b++) {
        const float *x = src + b * HC_QK4_0;
        uint8_t *blk = row + b * HC_Q4_0_BLOCK_BYTES;
        float amax = block_amax(x, HC_QK4_0), max = 0.0f;
        if (amax > 0.0f) {
            /* the first element whose magnitude is amax */
            const __m128 mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)), va = _mm_set1_ps(amax);
            unsigned hit = 0;
            for (int k = 0; k < 8; k++)
                hit |= (unsigned)_mm_movemask_ps(
                           _mm_cmpeq_ps(_mm_and_ps(_mm_loadu_ps(x + 4 * k), mask), va))
                       << (4 * k);
            max = x[__builtin_ctz(hit)];
        }
        float d = max / -8.0f;
        uint16_t dh = hc_scalar_fp32_to_fp16(d);
        memcpy(blk, &dh, 2);
        if (d == 0.0f) {
            memset(blk + 2, 0x88, HC_QK4_0 / 2);
            continue;
        }
        const __m128 vd = _mm_set1_ps(d);
        __m128i q[8];
        for (int k = 0; k < 8; k++) {
            __m128 v = _mm_add_ps(_mm_div_ps(_mm_loadu_ps(x + 4 * k), vd), half8);
            v = _mm_min_ps(_mm_max_ps(v, zero), top);
            q[k] = _mm_cvttps_epi32(v);
        }
        __m128i c[4];
        for (int k = 0; k < 4; k++)
            c[k] = _mm_or_si128(q[k], _mm_slli_epi32(q[k + 4], 4));
        __m128i w = _mm_packus_epi16(_mm_packs_epi32(c[0], c[1]), _mm_packs_epi32(c[2], c[3]));
        _mm_storeu_si128((__m128i *)(blk + 2), w);
    }
}

static void quantize_q8_0(const float *src, uint8_t *row, int64_t cols)
{
    const __m128 half = _mm_set1_ps(0.5f), mhalf = _mm_set1_ps(-0.5f), one = _mm_set1_ps(1.0f);
    const __m128 lo = _mm_set1_ps(-127.0f), hi = _mm_set1_ps(127.0f);
    for (int64_t b = 0; b < cols / HC_QK8_0; b++) {
        const float *x = src + b * HC_QK8_0;
        uint8_t *blk = row + b * HC_Q8_0_BLOCK_BYTES;
        float d = block_amax(x, HC_QK8_0) / 127.0f;
        uint16_t dh = hc_scalar_fp32_to_fp16(d);
        memcpy(blk, &dh, 2);
        if (d == 0.0f) {
            memset(blk + 2, 0, HC_QK8_0);
            continue;
        }
        const __m128 vd = _mm_set1_ps(d);
        __m128i q[8];
        for (int k = 0; k < 8; k++) {
            __m128 y = _mm_div_ps(_mm_loadu_ps(x + 4 * k), vd);
            __m128 t = _mm_cvtepi32_ps(_mm_cvttps_epi32(y));
            __m128 r = _mm_sub_ps(y, t);
            t = _mm_add_ps(t, _mm_and_ps(_mm_cmpge_ps(r, half), one));
            t = _mm_sub_ps(t, _mm_and_ps(_mm_cmple_ps(r, mhalf), one));
            q[k] = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(t, lo), hi));
        }
        for (int k = 0; k < 8; k += 4) {
            __m128i w = _mm_packs_epi16(_mm_packs_epi32(q[k], q[k + 1]),
                                        _mm_packs_epi32(q[k + 2], q[k + 3]));
            _mm_storeu_si128((__m128i *)(blk + 2 + 4 * k), w);
        }
    }
}

static void dequantize_q4_0(const uint8_t *row, float *dst, int64_t cols)
{
    const __m128i m4 = _mm_set1_epi8(0x0f), z = _mm_setzero_si128();
    const __m128 eight = _mm_set1_ps(8.0f);
    for (int64_t b = 0; b < cols / HC_QK4_0; b++) {
        const uint8_t *blk = row + b * HC_Q4_0_BLOCK_BYTES;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        const __m128 d = _mm_set1_ps(hc_scalar_fp16_to_fp32(dh));
        __m128i v = _mm_loadu_si128((const __m128i *)(blk + 2));
        __m128i half[2] = {_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4)};
        float *o = dst + b * HC_QK4_0;
        for (int h = 0; h < 2; h++) {
            __m128i w[2] = {_mm_unpacklo_epi8(half[h], z), _mm_unpackhi_epi8(half[h], z)};
            for (int k = 0; k < 2; k++) {
                __m128i i0 = _mm_unpacklo_epi16(w[k], z), i1 = _mm_unpackhi_epi16(w[k], z);
                /* (float)(q - 8) = (float)q - 8 exactly (small integers) */
                _mm_storeu_ps(o + 16 * h + 8 * k,
                              _mm_mul_ps(d, _mm_sub_ps(_mm_cvtepi32_ps(i0), eight)));
                _mm_storeu_ps(o + 16 * h + 8 * k + 4,
                              _mm_mul_ps(d, _mm_sub_ps(_mm_cvtepi32_ps(i1), eight)));
            }
        }
    }
}

static void dequantize_q8_0(const uint8_t *row, float *dst, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK8_0; b++) {
        const uint8_t *blk = row + b * HC_Q8_0_BLOCK_BYTES;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        const __m128 d = _mm_set1_ps(hc_scalar_fp16_to_fp32(dh));
        float *o = dst + b * HC_QK8_0;
        for (int h = 0; h < 2; h++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(blk + 2 + 16 * h));
            __m128i w[2] = {_mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8),
                            _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8)};
            for (int k = 0; k < 2; k++) {
                __m128i i0 = _mm_srai_epi32(_mm_unpacklo_epi16(w[k], w[k]), 16);
                __m128i i1 = _mm_srai_epi32(_mm_unpackhi_epi16(w[k], w[k]), 16);
                _mm_storeu_ps(o + 16 * h + 8 * k, _mm_mul_ps(d, _mm_cvtepi32_ps(i0)));
                _mm_storeu_ps(o + 16 * h + 8 * k + 4, _mm_mul_ps(d, _mm_cvtepi32_ps(i1)));
            }
        }
    }
}

/* ---- F16 (F16C when the CPU has it) ------------------------------------------ */
__attribute__((target("avx,f16c"))) static void to_f16_f16c(const float *src, uint8_t *row,
                                                           int64_t cols)
{
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8)
        _mm_storeu_si128((__m128i *)(row + 2 * c),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + c), _MM_FROUND_TO_NEAREST_INT));
    for (; c < cols; c++) {
        uint16_t h = hc_scalar_fp32_to_fp16(src[c]);
        memcpy(row + 2 * c, &h, 2);
    }
}

__attribute__((target("avx,f16c"))) static void from_f16_f16c(const uint8_t *row, float *dst,
                                                             int64_t cols)
{
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8)
        _mm256_storeu_ps(dst + c,
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * c))));
    for (; c < cols; c++) {
        uint16_t h;
        memcpy(&h, row + 2 * c, 2);
        dst[c] = hc_scalar_fp16_to_fp32(h);
    }
}

/* AVX and F16C, with the OS saving YMM state: CPUID.1:ECX bits 27
 * (OSXSAVE), 28 (AVX), 29 (F16C) and XCR0 bits 1-2.  Read from CPUID, as
 * clang 14's __builtin_cpu_supports has no "f16c"; once, since CPUID traps
 * to the hypervisor on a VM. */
static int have_f16c(void)
{
    static atomic_int known = -1;
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v >= 0)
        return v;
    unsigned a, b, c, d;
    v = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c >> 27 & 7u) == 7u) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        v = (lo & 6u) == 6u;
    }
    atomic_store_explicit(&known, v, memory_order_relaxed);
    return v;
}
#endif /* HC_MK_X86 */

void hc_mk_quantize_row(hc_type t, const float *src, void *row, int64_t cols)
{
#ifdef HC_MK_X86
    switch (t) {
    case HC_TYPE_Q4_0: quantize_q4_0(src, row, cols); return;
    case HC_TYPE_Q8_0: quantize_q8_0(src, row, cols); return;
    case HC_TYPE_F16:
        if (have_f16c()) {
            to_f16_f16c(src, row, cols);
            return;
        }
        break;
    default: break;
    }
#endif
    hc_scalar_quantize_row(t, src, row, cols);
}

void hc_mk_dequantize_row(hc_type t, const void *row, float *dst, int64_t cols)
{
#ifdef HC_MK_X86
    switch (t) {
    case HC_TYPE_Q4_0: dequantize_q4_0(row, dst, cols); return;
    case HC_TYPE_Q8_0: dequantize_q8_0(row, dst, cols); return;
    case HC_TYPE_F16:
        if (have_f16c()) {
            from_f16_f16c(row, dst, cols);
            return;
        }
        break;
    default: break;
    }
#endif
    hc_scalar_dequantize_row(t, row, dst, cols);
}

/* ---- calibration dots ----------------------------------------------------------- */
/* The 8 lanes' sums, the tail into lane 0, then the fixed pairwise order. */
static float finish8(const float l[8], const float *a, const float *b, int64_t i, int64_t n)
{
    float s0 = l[0];
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return ((s0 + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

#if defined(__GNUC__) || defined(__clang__)
typedef float v8f __attribute__((vector_size(32)));
#define LOAD8(v, p) memcpy(&(v), (p), sizeof(v8f))

/* Four inputs at a time, so each loaded element of `a` serves four sums. */
static inline __attribute__((always_inline)) void dots_body(const float *a, const float *in,
                                                            int64_t cols, int n_in, float *res,
                                                            int64_t stride)
{
    const int64_t nv = cols / 8 * 8;
    int tk = 0;
    float l[8];
    for (; tk + 4 <= n_in; tk += 4) {
        const float *b0 = in + (int64_t)tk * cols, *b1 = b0 + cols, *b2 = b1 + cols,
                    *b3 = b2 + cols;
        v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, x, y;
        for (int64_t i = 0; i < nv; i += 8) {
            LOAD8(x, a + i);
            LOAD8(y, b0 + i);
            s0 += x * y;
            LOAD8(y, b1 + i);
            s1 += x * y;
            LOAD8(y, b2 + i);
            s2 += x * y;
            LOAD8(y, b3 + i);
            s3 += x * y;
        }
        memcpy(l, &s0, sizeof l);
        res[(int64_t)tk * stride] = finish8(l, a, b0, nv, cols);
        memcpy(l, &s1, sizeof l);
        res[(int64_t)(tk + 1) * stride] = finish8(l, a, b1, nv, cols);
        memcpy(l, &s2, sizeof l);
        res[(int64_t)(tk + 2) * stride] = finish8(l, a, b2, nv, cols);
        memcpy(l, &s3, sizeof l);
        res[(int64_t)(tk + 3) * stride] = finish8(l, a, b3, nv, cols);
    }
    for (; tk < n_in; tk++) {
        const float *b0 = in + (int64_t)tk * cols;
        v8f s0 = {0}, x, y;
        for (int64_t i = 0; i < nv; i += 8) {
            LOAD8(x, a + i);
            LOAD8(y, b0 + i);
            s0 += x * y;
        }
        memcpy(l, &s0, sizeof l);
        res[(int64_t)tk * stride] = finish8(l, a, b0, nv, cols);
    }
}

static inline __attribute__((always_inline)) void axpy_body(float *o, float h,
                                                            const float *row, int64_t n)
{
    const v8f hv = {h, h, h, h, h, h, h, h};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        v8f x, y;
        LOAD8(x, row + c);
        LOAD8(y, o + c);
        y += hv * x;
        memcpy(o + c, &y, sizeof y);
    }
    for (; c < n; c++)
        o[c] += h * row[c];
}

#ifdef HC_MK_X86
__attribute__((target("avx"))) static void axpy_avx(float *o, float h, const float *row,
                                                    int64_t n)
{
    axpy_body(o, h, row, n);
}

__attribute__((target("avx"))) static void dots_avx(const float *a, const float *in,
                                                    int64_t cols, int n_in, float *res,
                                                    int64_t stride)
{
    dots_body(a, in, cols, n_in, res, stride);
}
#endif

void hc_mk_dots(const float *a, const float *in, int64_t cols, int n_in, float *res,
                int64_t res_stride)
{
#ifdef HC_MK_X86
    if (__builtin_cpu_supports("avx")) {
        dots_avx(a, in, cols, n_in, res, res_stride);
        return;
    }
#endif
    dots_body(a, in, cols, n_in, res, res_stride);
}
void hc_mk_axpy(float *o, float h, const float *row, int64_t n)
{
#ifdef HC_MK_X86
    if (__builtin_cpu_supports("avx")) {
        axpy_avx(o, h, row, n);
        return;
    }
#endif
    axpy_body(o, h, row, n);
}
#else
void hc_mk_axpy(float *o, float h, const float *row, int64_t n)
{
    for (int64_t c = 0; c < n; c++)
        o[c] += h * row[c];
}

void hc_mk_dots(const float *a, const float *in, int64_t cols, int n_in, float *res,
                int64_t res_stride)
{
    for (int tk = 0; tk < n_in; tk++) {
        const float *b = in + (int64_t)tk * cols;
        float l[8] = {0};
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8)
            for (int j = 0; j < 8; j++)
                l[j] += a[i + j] * b[i + j];
        res[(int64_t)tk * res_stride] = finish8(l, a, b, i, cols);
    }
}
#endif
