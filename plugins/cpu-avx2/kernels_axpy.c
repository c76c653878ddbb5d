/*
 * axpy_rows: y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c], k in list order.
 *
 * PowerInfer splits this over rows and lets threads add into y unlocked,
 * which races and makes results depend on timing.  Here each thread owns a
 * range of 32-column blocks (whole quantization blocks) and adds the listed
 * rows into its columns in list order, so every y element is summed by one
 * thread in one fixed order: deterministic and independent of the thread
 * count.  Rows are taken GROUP at a time so each y vector is loaded and
 * stored once per group while the group's rows stream in parallel.
 *
 * Per element: y = fma(w, h, y) for F32/F16 (w exact), and
 * y = fma(q, d*h, y) for Q8_0 (q) and Q4_0 (q - 8), with d*h rounded once.
 */
#include "kernels_common.h"

#define GROUP 8

#if defined(HC_CPU_KERNELS_AVX2)
/* Quantized blocks decode without the shuffle port's pmovsx: vpshufb (two
 * ports on recent cores) moves each weight byte into the TOP byte of a
 * 32-bit lane, so the lane holds q * 2^24 exactly, and the 2^-24 goes into
 * the per-row scale (exact: a power of two).  Each product is therefore
 * exactly q * (d*h) as in the scalar formula. */
#define TOP_BYTE_SCALE (1.0f / 16777216.0f)

/* vpshufb controls: lane i of the result gets byte (base + i) in its top
 * byte; 0x80 zeroes.  Low 128 bits pick bytes 0-3 (+ base), high 128 bits
 * bytes 4-7, matching a source with the same 16 bytes in both halves. */
HC_ALWAYS_INLINE __m256i top_byte_ctl(int base)
{
    const char z = (char)0x80;
    return _mm256_setr_epi8(z, z, z, (char)(base + 0), z, z, z, (char)(base + 1), z, z, z,
                            (char)(base + 2), z, z, z, (char)(base + 3), z, z, z,
                            (char)(base + 4), z, z, z, (char)(base + 5), z, z, z,
                            (char)(base + 6), z, z, z, (char)(base + 7));
}

/* 32 weights of one block as 4 x 8 floats, in column order, and the block
 * scale d (1 for F32/F16).  The per-row multiplier is d * (h * h_scale(type)). */
HC_ALWAYS_INLINE float h_scale(const hc_type type)
{
    return type == HC_TYPE_F32 || type == HC_TYPE_F16 ? 1.0f : TOP_BYTE_SCALE;
}

HC_ALWAYS_INLINE void decode_block(const hc_type type, const uint8_t *row, int64_t blk,
                                   __m256 v[4], float *d)
{
    if (type == HC_TYPE_F32) {
        const float *p = (const float *)row + blk * 32;
        for (int j = 0; j < 4; j++)
            v[j] = _mm256_loadu_ps(p + 8 * j);
        *d = 1.0f;
    } else if (type == HC_TYPE_F16) {
        const uint8_t *p = row + blk * 64;
        for (int j = 0; j < 4; j++)
            v[j] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16 * j)));
        *d = 1.0f;
    } else if (type == HC_TYPE_Q8_0) {
        const uint8_t *b = row + blk * HC_Q8_0_BLOCK_BYTES;
        const __m256i q0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + 2)));
        const __m256i q1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + 18)));
        v[0] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(q0, top_byte_ctl(0)));
        v[1] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(q0, top_byte_ctl(8)));
        v[2] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(q1, top_byte_ctl(0)));
        v[3] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(q1, top_byte_ctl(8)));
        *d = hc_f16(b);
    } else {
        const uint8_t *b = row + blk * HC_Q4_0_BLOCK_BYTES;
        const __m256i m4 = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
        const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + 2)));
        /* Elements 0..15 are the low nibbles, 16..31 the high ones; minus 8
         * as signed bytes, which the top-byte placement sign-extends. */
        const __m256i lo = _mm256_sub_epi8(_mm256_and_si256(q, m4), eight);
        const __m256i hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), eight);
        v[0] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(lo, top_byte_ctl(0)));
        v[1] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(lo, top_byte_ctl(8)));
        v[2] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(hi, top_byte_ctl(0)));
        v[3] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(hi, top_byte_ctl(8)));
        *d = hc_f16(b);
    }
}

/* One token: decode and add row by row straight into the y registers.
 * hs[i] is h already multiplied by h_scale(type). */
HC_ALWAYS_INLINE void axpy_one(const hc_type type, int g, const uint8_t *const *w,
                               const float *hs, float *y, int64_t b0, int64_t b1)
{
    for (int64_t b = b0; b < b1; b++) {
        float *yb = y + b * 32;
        __m256 a[4];
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_loadu_ps(yb + 8 * j);
        for (int i = 0; i < g; i++) {
            __m256 v[4];
            float f;
            decode_block(type, w[i], b, v, &f);
            const __m256 s = _mm256_set1_ps(f * hs[i]);
            for (int j = 0; j < 4; j++)
                a[j] = _mm256_fmadd_ps(v[j], s, a[j]);
        }
        for (int j = 0; j < 4; j++)
            _mm256_storeu_ps(yb + 8 * j, a[j]);
    }
}

/* Several tokens: each block of the group is decoded once into `dec` and
 * reused for every token (same products, same order as axpy_one). */
HC_ALWAYS_INLINE void axpy_many(const hc_type type, int g, const uint8_t *const *w,
                                const hc_cpu_axpy_args *a, const int32_t *rr, int64_t b0,
                                int64_t b1)
{
    _Alignas(32) float dec[GROUP][32];
    float fac[GROUP];
    for (int64_t b = b0; b < b1; b++) {
        for (int i = 0; i < g; i++) {
            __m256 v[4];
            decode_block(type, w[i], b, v, &fac[i]);
            for (int j = 0; j < 4; j++)
                _mm256_store_ps(dec[i] + 8 * j, v[j]);
        }
        for (int64_t t = 0; t < a->n; t++) {
            const float *ht = a->h + t * a->rows;
            float *yb = a->y + t * a->cols + b * 32;
            __m256 acc[4];
            for (int j = 0; j < 4; j++)
                acc[j] = _mm256_loadu_ps(yb + 8 * j);
            for (int i = 0; i < g; i++) {
                const __m256 s = _mm256_set1_ps(fac[i] * (ht[rr[i]] * h_scale(type)));
                for (int j = 0; j < 4; j++)
                    acc[j] = _mm256_fmadd_ps(_mm256_load_ps(dec[i] + 8 * j), s, acc[j]);
            }
            for (int j = 0; j < 4; j++)
                _mm256_storeu_ps(yb + 8 * j, acc[j]);
        }
    }
}

/* Columns past the last whole block of 32 (F32/F16 only): scalar, with the
 * same fused multiply-add as the vector lanes. */
static void axpy_tail(hc_type type, int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,
                      const int32_t *rr, int64_t c0, int64_t c1)
{
    for (int64_t t = 0; t < a->n; t++) {
        float *y = a->y + t * a->cols;
        for (int64_t c = c0; c < c1; c++) {
            float s = y[c];
            for (int i = 0; i < g; i++) {
                float wv = type == HC_TYPE_F16 ? hc_f16(w[i] + 2 * c) : ((const float *)w[i])[c];
                s = fmaf(wv, a->h[t * a->rows + rr[i]], s);
            }
            y[c] = s;
        }
    }
}

#define AXPY_TYPES(X) X(HC_TYPE_F32, f32) X(HC_TYPE_F16, f16) X(HC_TYPE_Q8_0, q8) X(HC_TYPE_Q4_0, q4)
#define AXPY_FNS(T, name)                                                                          \
    static void axpy_one_##name(int g, const uint8_t *const *w, const float *hs, float *y,         \
                                int64_t b0, int64_t b1)                                            \
    {                                                                                              \
        axpy_one(T, g, w, hs, y, b0, b1);                                                          \
    }                                                                                              \
    static void axpy_many_##name(int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,        \
                                 const int32_t *rr, int64_t b0, int64_t b1)                        \
    {                                                                                              \
        axpy_many(T, g, w, a, rr, b0, b1);                                                         \
    }
AXPY_TYPES(AXPY_FNS)

static void axpy_group(int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,
                       const int32_t *rr, int64_t c0, int64_t c1)
{
    const int64_t b0 = c0 / 32, b1 = c1 / 32; /* c0 is block-aligned */
    if (a->n == 1) {
        float hs[GROUP];
        const float hsc = h_scale(a->type);
        for (int i = 0; i < g; i++)
            hs[i] = a->h[rr[i]] * hsc;
        switch (a->type) {
        case HC_TYPE_F32: axpy_one_f32(g, w, hs, a->y, b0, b1); break;
        case HC_TYPE_F16: axpy_one_f16(g, w, hs, a->y, b0, b1); break;
        case HC_TYPE_Q8_0: axpy_one_q8(g, w, hs, a->y, b0, b1); break;
        case HC_TYPE_Q4_0: axpy_one_q4(g, w, hs, a->y, b0, b1); break;
        }
    } else {
        switch (a->type) {
        case HC_TYPE_F32: axpy_many_f32(g, w, a, rr, b0, b1); break;
        case HC_TYPE_F16: axpy_many_f16(g, w, a, rr, b0, b1); break;
        case HC_TYPE_Q8_0: axpy_many_q8(g, w, a, rr, b0, b1); break;
        case HC_TYPE_Q4_0: axpy_many_q4(g, w, a, rr, b0, b1); break;
        }
    }
    if (b1 * 32 < c1)
        axpy_tail(a->type, g, w, a, rr, b1 * 32, c1);
}

#else /* generic */

static void axpy_token(hc_type type, int g, const uint8_t *const *w, const float *hs, float *y,
                       int64_t c0, int64_t c1)
{
    for (int64_t c = c0; c < c1; c++) {
        float s = y[c];
        for (int i = 0; i < g; i++) {
            const uint8_t *row = w[i];
            switch (type) {
            case HC_TYPE_F32: s += ((const float *)row)[c] * hs[i]; break;
            case HC_TYPE_F16: s += hc_f16(row + 2 * c) * hs[i]; break;
            case HC_TYPE_Q8_0: {
                const uint8_t *blk = row + (c / 32) * HC_Q8_0_BLOCK_BYTES;
                s += (float)(int8_t)blk[2 + c % 32] * (hc_f16(blk) * hs[i]);
                break;
            }
            case HC_TYPE_Q4_0: {
                const uint8_t *blk = row + (c / 32) * HC_Q4_0_BLOCK_BYTES;
                int j = (int)(c % 32);
                int q = j < 16 ? (blk[2 + j] & 0x0f) : (blk[2 + j - 16] >> 4);
                s += (float)(q - 8) * (hc_f16(blk) * hs[i]);
                break;
            }
            }
        }
        y[c] = s;
    }
}

static void axpy_group(int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,
                       const int32_t *rr, int64_t c0, int64_t c1)
{
    for (int64_t t = 0; t < a->n; t++) {
        float hs[GROUP];
        for (int i = 0; i < g; i++)
            hs[i] = a->h[t * a->rows + rr[i]];
        axpy_token(a->type, g, w, hs, a->y + t * a->cols, c0, c1);
    }
}
#endif

void hc_cpu_axpy_task(void *args, int ith, int nth)
{
    const hc_cpu_axpy_args *a = args;
    int64_t b0, b1;

    hc_cpu_split((a->cols + 31) / 32, ith, nth, 1, &b0, &b1);
    const int64_t c0 = b0 * 32, c1 = b1 * 32 < a->cols ? b1 * 32 : a->cols;
    if (c0 >= c1)
        return;
    /* Where this thread's columns start inside a row. */
    const size_t col_off = (size_t)hc_type_row_size(a->type, c0);
    for (int64_t k = 0; k < a->n_idx; k += GROUP) {
        const int g = a->n_idx - k < GROUP ? (int)(a->n_idx - k) : GROUP;
        const uint8_t *w[GROUP];
        int32_t rr[GROUP];
        for (int i = 0; i < g; i++) {
            rr[i] = a->idx[k + i];
            w[i] = a->wt + (size_t)rr[i] * a->row_bytes;
        }
        /* Rows are scattered, so the hardware prefetcher only catches on
         * after a few misses per row: start the next group's rows now. */
        for (int64_t i = k + GROUP; i < k + 2 * GROUP && i < a->n_idx; i++) {
            const uint8_t *nx = a->wt + (size_t)a->idx[i] * a->row_bytes + col_off;
            __builtin_prefetch(nx);
            __builtin_prefetch(nx + 64);
            __builtin_prefetch(nx + 128);
            __builtin_prefetch(nx + 192);
        }
        axpy_group(g, w, a, rr, c0, c1);
    }
}
