/*
 * axpy_rows: y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c], k in list order.
 *
 * PowerInfer splits this over rows and lets threads add into y unlocked,
 * which races and makes results depend on timing.  Here every y element is
 * summed in one fixed order that does not depend on the thread count, in
 * one of two ways:
 *
 *  - in general each thread owns a range of 32-column blocks (whole
 *    quantization blocks) and adds the listed rows into its columns in list
 *    order.  Rows are taken GROUP at a time so each y vector is loaded and
 *    stored once per group while the group's rows stream in parallel;
 *  - one token of Q4_0 in the avx2 build (sparse decode, and dense decode of
 *    PWRI files, which store down transposed) cuts the row list into
 *    slices whose size depends only on the list length
 *    (hc_cpu_axpy_slices), sums each slice over all columns into a partial
 *    vector of its own, and then adds the partials to y in slice order
 *    (hc_cpu_axpy_reduce_task).  A thread then reads whole rows, one run of
 *    memory, where owning half the columns made it read half of every row:
 *    the hardware prefetcher ran on into the other half, which the other
 *    thread read again (about 15% slower from DRAM on two threads).
 *
 * Per element: y = fma(w, h, y) for F32/F16 (w exact), and
 * y = fma(q, d*h, y) for Q8_0 (q) and Q4_0 (q - 8), with d*h rounded once;
 * except that one-token Q4_0 path, which has a faster decoding of its own
 * (axpy1_q4 below: same weights, the running sums carry an offset).
 */
#include "kernels_common.h"

/* Groups ahead whose rows are prefetched (HC_AXPY_PF_GROUPS = 2): 16 rows,
 * about what measured best for scattered rows of 0.5-1 KiB on one and two
 * threads. */
#define GROUP HC_AXPY_GROUP
#define PF_GROUPS HC_AXPY_PF_GROUPS

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
                               const float *hs, float *y, int64_t b0, int64_t b1,
                               hc_prefetch *pf)
{
    const uint64_t bb = hc_type_row_size(type, 32);
    for (int64_t b = b0; b < b1; b++) {
        float *yb = y + b * 32;
        hc_prefetch_lines(pf, (uint64_t)(b - b0) * bb, bb);
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
                                int64_t b1, hc_prefetch *pf)
{
    _Alignas(32) float dec[GROUP][32];
    float fac[GROUP];
    const uint64_t bb = hc_type_row_size(type, 32);
    for (int64_t b = b0; b < b1; b++) {
        hc_prefetch_lines(pf, (uint64_t)(b - b0) * bb, bb);
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
                                int64_t b0, int64_t b1, hc_prefetch *pf)                         \
    {                                                                                              \
        axpy_one(T, g, w, hs, y, b0, b1, pf);                                                      \
    }                                                                                              \
    static void axpy_many_##name(int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,        \
                                 const int32_t *rr, int64_t b0, int64_t b1, hc_prefetch *pf)     \
    {                                                                                              \
        axpy_many(T, g, w, a, rr, b0, b1, pf);                                                     \
    }
AXPY_TYPES(AXPY_FNS)

/* ---- one token of Q4_0: the sparse-decode case --------------------------- */

/*
 * The general path above spends most of its time turning nibbles into
 * floats (a byte shuffle and an int->float conversion per 8 weights), and
 * the shuffles all queue for one port.  This path decodes with two byte
 * interleaves per block and otherwise shifts and masks, which spread over
 * the vector ports alongside the FMAs:
 *
 *  - each nibble q lands in bits 16..19 of a lane whose top byte is 0x40,
 *    which IS the float 2 + q/64 (no conversion instruction);
 *  - since 2 + q/64 = (q - 8)/64 + 17/8, a row adds
 *      h*d*(q - 8) = (64*h*d) * v - (136/64) * (64*h*d),
 *    so the FMAs use s = 64*h*d (exact: a power of two) and the constant
 *    part of a group of rows is subtracted once per block, as 2.125 * sum(s)
 *    (sum in row order).  The running sums carry that offset (|s*v| up to
 *    ~135|h*d| instead of 8|h*d|), a few bits of rounding: NMSE ~1e-12
 *    against the exact sum, see test_cpu_plugin's decode shapes;
 *  - the decode produces the columns of a block in the order
 *      v0 = 0,2,4,6 | 16,18,20,22    v1 = 1,3,5,7 | 17,19,21,23
 *      v2 = 8,10,..,14 | 24,..,30    v3 = 9,11,..,15 | 25,..,31
 *    so a thread copies its columns of y into that order once per call
 *    (Q4_CHUNK blocks at a time, 8 KiB that stay in L1), adds every listed
 *    row there, and copies them back;
 *  - the block scales of a chunk are gathered 8 at a time and converted
 *    with F16C before the FMA loop, which then only broadcasts them.
 *
 * Each y element still gets y + (its rows in list order) - (corrections in
 * group order), independent of how the columns are split.
 */
#define Q4_SCALE HC_AXPY_Q4_SCALE
#define Q4_OFFSET HC_AXPY_Q4_OFFSET
#define Q4_CHUNK HC_AXPY_Q4_CHUNK

/* The fp16 block scales d of blocks [0, n) of a row (n <= 8) times hs.
 * Lanes >= n are 0 and read nothing. */
HC_ALWAYS_INLINE __m256 q4_scales8(const uint8_t *row, int n, __m256 hs)
{
    const __m256i at = _mm256_setr_epi32(0, 18, 36, 54, 72, 90, 108, 126);
    __m256i v;
    if (n >= 8) {
        v = _mm256_i32gather_epi32((const int *)(const void *)row, at, 1);
    } else {
        const __m256i on = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        v = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(const void *)row, at, on, 1);
    }
    /* Low 16 bits of each lane, packed to 8 halves in lane order. */
    v = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
    v = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08);
    return _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(v)), hs);
}

/* 32 weights as 2 + q/64, in the decode order above. */
HC_ALWAYS_INLINE void q4_lanes(const uint8_t *blk, __m256 v[4])
{
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2)));
    /* Low half: the low nibbles (columns 0..15); high half: the high ones. */
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                                         _mm256_set1_epi8(0x0f));
    /* 16-bit words q | 0x40 << 8: columns 0..7 | 16..23, and 8..15 | 24..31. */
    const __m256i top = _mm256_set1_epi8(0x40), hi16 = _mm256_set1_epi32((int)0xffff0000u);
    const __m256i u0 = _mm256_unpacklo_epi8(nib, top), u1 = _mm256_unpackhi_epi8(nib, top);
    /* Even words into the high half of their lane, odd words stay there. */
    v[0] = _mm256_castsi256_ps(_mm256_slli_epi32(u0, 16));
    v[1] = _mm256_castsi256_ps(_mm256_and_si256(u0, hi16));
    v[2] = _mm256_castsi256_ps(_mm256_slli_epi32(u1, 16));
    v[3] = _mm256_castsi256_ps(_mm256_and_si256(u1, hi16));
}

/* One block of y (32 floats) into decode order at d, and back. */
HC_ALWAYS_INLINE void q4_y_in(const float *y, float *d)
{
    const __m256 y0 = _mm256_loadu_ps(y), y1 = _mm256_loadu_ps(y + 8);
    const __m256 y2 = _mm256_loadu_ps(y + 16), y3 = _mm256_loadu_ps(y + 24);
    const __m256 a = _mm256_permute2f128_ps(y0, y2, 0x20), b = _mm256_permute2f128_ps(y0, y2, 0x31);
    const __m256 c = _mm256_permute2f128_ps(y1, y3, 0x20), e = _mm256_permute2f128_ps(y1, y3, 0x31);
    _mm256_store_ps(d, _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm256_store_ps(d + 8, _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm256_store_ps(d + 16, _mm256_shuffle_ps(c, e, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm256_store_ps(d + 24, _mm256_shuffle_ps(c, e, _MM_SHUFFLE(3, 1, 3, 1)));
}

HC_ALWAYS_INLINE void q4_y_out(const float *d, float *y)
{
    const __m256 d0 = _mm256_load_ps(d), d1 = _mm256_load_ps(d + 8);
    const __m256 d2 = _mm256_load_ps(d + 16), d3 = _mm256_load_ps(d + 24);
    const __m256 lo = _mm256_unpacklo_ps(d0, d1), hi = _mm256_unpackhi_ps(d0, d1);
    const __m256 lo2 = _mm256_unpacklo_ps(d2, d3), hi2 = _mm256_unpackhi_ps(d2, d3);
    _mm256_storeu_ps(y, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(y + 8, _mm256_permute2f128_ps(lo2, hi2, 0x20));
    _mm256_storeu_ps(y + 16, _mm256_permute2f128_ps(lo, hi, 0x31));
    _mm256_storeu_ps(y + 24, _mm256_permute2f128_ps(lo2, hi2, 0x31));
}

/* G rows (w[i]: their part at this chunk) into nb blocks of yd (decode
 * order); h64[i] = 64 * h of row i.  G is a constant for full groups. */
HC_ALWAYS_INLINE void q4_group(const int G, const uint8_t *const *w, const float *h64, float *yd,
                               int nb, hc_prefetch *pf)
{
    _Alignas(32) float sc[GROUP][Q4_CHUNK];
    _Alignas(32) float corr[Q4_CHUNK];
    for (int j = 0; j < nb; j += 8) {
        const int n = nb - j < 8 ? nb - j : 8;
        __m256 sum = _mm256_setzero_ps();
        for (int i = 0; i < G; i++) {
            const __m256 s = q4_scales8(w[i] + (size_t)j * HC_Q4_0_BLOCK_BYTES, n,
                                        _mm256_set1_ps(h64[i]));
            _mm256_store_ps(&sc[i][j], s);
            sum = _mm256_add_ps(sum, s);
        }
        _mm256_store_ps(&corr[j], _mm256_mul_ps(sum, _mm256_set1_ps(Q4_OFFSET)));
    }
    for (int k = 0; k < nb; k++) {
        const size_t off = (size_t)k * HC_Q4_0_BLOCK_BYTES;
        float *d = yd + k * 32;
        hc_prefetch_lines(pf, off, HC_Q4_0_BLOCK_BYTES);
        __m256 acc[4];
        for (int j = 0; j < 4; j++)
            acc[j] = _mm256_load_ps(d + 8 * j);
        for (int i = 0; i < G; i++) {
            __m256 v[4];
            q4_lanes(w[i] + off, v);
            const __m256 s = _mm256_broadcast_ss(&sc[i][k]);
            for (int j = 0; j < 4; j++)
                acc[j] = _mm256_fmadd_ps(v[j], s, acc[j]);
        }
        const __m256 c = _mm256_broadcast_ss(&corr[k]);
        for (int j = 0; j < 4; j++)
            _mm256_store_ps(d + 8 * j, _mm256_sub_ps(acc[j], c));
    }
}

static void q4_group_full(const uint8_t *const *w, const float *h64, float *yd, int nb,
                          hc_prefetch *pf)
{
    q4_group(GROUP, w, h64, yd, nb, pf);
}

static void q4_group_part(int g, const uint8_t *const *w, const float *h64, float *yd, int nb,
                          hc_prefetch *pf)
{
    q4_group(g, w, h64, yd, nb, pf);
}

/* Rows at list positions [k0, k1) added into all columns of y (one token,
 * Q4_0); rows up to the end of the list are prefetched, so a thread's next
 * slice starts warm.  The AVX-512 group step works on y in place, the AVX2
 * one on a copy in its decode order. */
static void axpy1_q4(const hc_cpu_axpy_args *a, int64_t k0, int64_t k1, float *y)
{
    _Alignas(32) float yd[Q4_CHUNK * 32];
    const int64_t nbt = a->cols / 32;
#if defined(HC_CPU_HAVE_AVX512)
    const int wide = a->avx512;
#else
    const int wide = 0;
#endif
    for (int64_t cb = 0; cb < nbt; cb += Q4_CHUNK) {
        const int nb = nbt - cb < Q4_CHUNK ? (int)(nbt - cb) : Q4_CHUNK;
        const size_t coff = (size_t)cb * HC_Q4_0_BLOCK_BYTES;
        float *yc = wide ? y + cb * 32 : yd;
        for (int k = 0; k < nb && !wide; k++)
            q4_y_in(y + (cb + k) * 32, yd + k * 32);
        for (int64_t kk = k0; kk < k1; kk += GROUP) {
            const int g = k1 - kk < GROUP ? (int)(k1 - kk) : GROUP;
            const uint8_t *w[GROUP];
            float h64[GROUP];
            hc_prefetch pf = {.n = 0};
            for (int i = 0; i < g; i++) {
                const int32_t r = a->idx[kk + i];
                w[i] = a->wt + (size_t)r * a->row_bytes + coff;
                h64[i] = a->h[r] * Q4_SCALE;
            }
            for (int64_t i = kk + PF_GROUPS * GROUP; i < kk + (PF_GROUPS + 1) * GROUP && i < a->n_idx; i++)
                pf.p[pf.n++] = a->wt + (size_t)a->idx[i] * a->row_bytes + coff;
#if defined(HC_CPU_HAVE_AVX512)
            if (wide) {
                hc_cpu_axpy_q4_group_avx512(g, w, h64, yc, nb, &pf);
                continue;
            }
#endif
            if (g == GROUP)
                q4_group_full(w, h64, yc, nb, &pf);
            else
                q4_group_part(g, w, h64, yc, nb, &pf);
        }
        for (int k = 0; k < nb && !wide; k++)
            q4_y_out(yd + k * 32, y + (cb + k) * 32);
    }
}

/* This thread's slices: each zeroed, then its rows added. */
static void axpy1_q4_slices(const hc_cpu_axpy_args *a, int ith, int nth)
{
    int64_t s0, s1;
    hc_cpu_split(a->n_slices, ith, nth, 1, &s0, &s1);
    for (int64_t sl = s0; sl < s1; sl++) {
        float *part = a->partial + sl * a->cols;
        const int64_t k0 = sl * a->slice_rows;
        const int64_t k1 = k0 + a->slice_rows < a->n_idx ? k0 + a->slice_rows : a->n_idx;
        memset(part, 0, (size_t)a->cols * sizeof(float));
        axpy1_q4(a, k0, k1, part);
    }
}

static void axpy_group(int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,
                       const int32_t *rr, int64_t c0, int64_t c1, hc_prefetch *pf)
{
    const int64_t b0 = c0 / 32, b1 = c1 / 32; /* c0 is block-aligned */
    if (a->n == 1) {
        float hs[GROUP];
        const float hsc = h_scale(a->type);
        for (int i = 0; i < g; i++)
            hs[i] = a->h[rr[i]] * hsc;
        switch (a->type) {
        case HC_TYPE_F32: axpy_one_f32(g, w, hs, a->y, b0, b1, pf); break;
        case HC_TYPE_F16: axpy_one_f16(g, w, hs, a->y, b0, b1, pf); break;
        case HC_TYPE_Q8_0: axpy_one_q8(g, w, hs, a->y, b0, b1, pf); break;
        case HC_TYPE_Q4_0: axpy_one_q4(g, w, hs, a->y, b0, b1, pf); break;
        case HC_TYPE_Q6_K: break; /* refused by hc_cpu_axpy_rows */
        }
    } else {
        switch (a->type) {
        case HC_TYPE_F32: axpy_many_f32(g, w, a, rr, b0, b1, pf); break;
        case HC_TYPE_F16: axpy_many_f16(g, w, a, rr, b0, b1, pf); break;
        case HC_TYPE_Q8_0: axpy_many_q8(g, w, a, rr, b0, b1, pf); break;
        case HC_TYPE_Q4_0: axpy_many_q4(g, w, a, rr, b0, b1, pf); break;
        case HC_TYPE_Q6_K: break; /* refused by hc_cpu_axpy_rows */
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
            case HC_TYPE_Q6_K: break; /* refused by hc_cpu_axpy_rows */
            }
        }
        y[c] = s;
    }
}

static void axpy_group(int g, const uint8_t *const *w, const hc_cpu_axpy_args *a,
                       const int32_t *rr, int64_t c0, int64_t c1, hc_prefetch *pf)
{
    (void)pf; /* plain C: left to the hardware prefetcher */
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
    const int64_t nb = (a->cols + 31) / 32;
    int64_t b0, b1;

#if defined(HC_CPU_KERNELS_AVX2)
    if (a->partial) {
        axpy1_q4_slices(a, ith, nth);
        return;
    }
#endif
    /* The column split.  Threads meet at cache-line boundaries of the rows
     * when that keeps the shares even (whole units per thread, or many
     * units): 32 blocks of Q4_0/Q8_0 (576 / 1088 bytes) are whole lines,
     * where one block is not, and a line two threads share is read from
     * DRAM twice.  (Row starts are line-aligned whenever the row size is a
     * multiple of 64, as for any n_embd that is a multiple of 1024 in
     * Q4_0/Q8_0.) */
    const int quant = a->type == HC_TYPE_Q4_0 || a->type == HC_TYPE_Q8_0;
    const int64_t units = (nb + 31) / 32;
    const int lines = quant && units > 0 && (units % nth == 0 || units >= 8 * (int64_t)nth);
    hc_cpu_split(nb, ith, nth, lines ? 32 : 1, &b0, &b1);
    const int64_t c0 = b0 * 32, c1 = b1 * 32 < a->cols ? b1 * 32 : a->cols;
    if (c0 >= c1)
        return;
    /* Where this thread's columns start inside a row, and how many bytes
     * of each row it reads. */
    const uint64_t col_off = hc_type_row_size(a->type, c0);
    const uint64_t part = hc_type_row_size(a->type, c1 - c0);
    const int prefetch = a->type != HC_TYPE_F32 || part < 2048;
    for (int64_t k = 0; k < a->n_idx; k += GROUP) {
        const int g = a->n_idx - k < GROUP ? (int)(a->n_idx - k) : GROUP;
        const uint8_t *w[GROUP];
        int32_t rr[GROUP];
        hc_prefetch pf = {.n = 0};
        for (int i = 0; i < g; i++) {
            rr[i] = a->idx[k + i];
            w[i] = a->wt + (size_t)rr[i] * a->row_bytes;
        }
        /* Rows are scattered, so the hardware prefetcher only catches on
         * after a few misses per row: request a later group's rows now
         * (except long F32 rows, which stream as fast without). */
        for (int64_t i = k + PF_GROUPS * GROUP;
             prefetch && i < k + (PF_GROUPS + 1) * GROUP && i < a->n_idx; i++)
            pf.p[pf.n++] = a->wt + (size_t)a->idx[i] * a->row_bytes + col_off;
        axpy_group(g, w, a, rr, c0, c1, &pf);
    }
}

int64_t hc_cpu_axpy_slices(hc_type type, int64_t n, int64_t n_idx, int64_t *slice_rows)
{
    *slice_rows = 0;
#if defined(HC_CPU_KERNELS_AVX2)
    if (n != 1 || type != HC_TYPE_Q4_0 || n_idx <= 0)
        return 0;
    /* At least ~48 rows a slice (each partial costs a pass over cols floats
     * to add), at most 16 slices, and a power of two so that 2, 4, 8 or 16
     * threads get equal shares.  Whole groups of rows per slice. */
    int64_t ns = 1;
    while (ns < 16 && n_idx / (2 * ns) >= 48)
        ns *= 2;
    int64_t per = (n_idx + ns - 1) / ns;
    per = (per + GROUP - 1) / GROUP * GROUP;
    *slice_rows = per;
    return (n_idx + per - 1) / per;
#else
    (void)type;
    (void)n;
    (void)n_idx;
    return 0; /* plain C keeps the column split */
#endif
}

void hc_cpu_axpy_reduce_task(void *args, int ith, int nth)
{
    const hc_cpu_axpy_args *a = args;
    int64_t c0, c1;

    /* y + p0 + p1 + ... per element, in slice order: any column split
     * gives the same sums. */
    hc_cpu_split(a->cols, ith, nth, 16, &c0, &c1);
    for (int64_t sl = 0; sl < a->n_slices; sl++) {
        const float *p = a->partial + sl * a->cols;
        for (int64_t c = c0; c < c1; c++)
            a->y[c] += p[c];
    }
}
