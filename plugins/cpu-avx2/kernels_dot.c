/*
 * Dense and row-list products: y[t][r] = W[r] . x[t].
 *
 * Work is split over rows (each thread owns whole rows of y).  Within a
 * thread, rows are processed in tiles of R rows x T tokens so that a weight
 * row is read once per T tokens and several independent accumulator chains
 * hide FMA latency.  Every (row, token) pair has its own accumulator and
 * goes through the same sequence of operations whatever the tile shape, so
 * y is bit-identical for any split or thread count.
 */
#include "kernels_common.h"

/* Built twice in the avx2 plugin: once as is, once with -mavxvnni as
 * hc_cpu_mm_task_vnni (the plugin picks one at init, see entry.c). */
#if defined(__AVXVNNI__)
#define HC_CPU_MM_TASK hc_cpu_mm_task_vnni
#define HC_CPU_MM_BATCH_TASK hc_cpu_mm_batch_task_vnni
#else
#define HC_CPU_MM_TASK hc_cpu_mm_task
#define HC_CPU_MM_BATCH_TASK hc_cpu_mm_batch_task
#endif

/* Tokens handled together: x for this many tokens stays in L1/L2 while a
 * row group is read once. */
#define TOKEN_BLOCK 32
/* How far ahead rows are prefetched (hc_prefetch): at least PF_TILES tiles
 * and at least PF_BYTES of weights, so that short rows (a predictor's fc2
 * has rows of 144 bytes in Q4_0) are still requested a DRAM latency or more
 * ahead. */
#define PF_TILES 2
#define PF_BYTES 4096

typedef struct tile {
    const uint8_t *w[8];  /* R row starts */
    int64_t out[8];       /* R output rows */
    hc_prefetch pf;       /* rows a later tile reads: requested meanwhile */
} tile;

#if defined(HC_CPU_KERNELS_AVX2)

/* ---- F32 / F16 weights, F32 x ------------------------------------------ */

HC_ALWAYS_INLINE __m256 load_w8(hc_type t, const uint8_t *row, int64_t c)
{
    if (t == HC_TYPE_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * c)));
    return _mm256_loadu_ps((const float *)row + c);
}

HC_ALWAYS_INLINE float load_w1(hc_type t, const uint8_t *row, int64_t c)
{
    return t == HC_TYPE_F16 ? hc_f16(row + 2 * c) : ((const float *)row)[c];
}

HC_ALWAYS_INLINE void tile_float(const hc_type type, const int R, const int T, tile *tl,
                                 const hc_cpu_mm_args *a, int64_t t0)
{
    const int64_t cols = a->cols;
    const float *x[4];
    __m256 acc[8][4];
    int64_t c = 0;

    for (int t = 0; t < T; t++)
        x[t] = a->x + (t0 + t) * cols;
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            acc[r][t] = _mm256_setzero_ps();
    /* Float rows of 2 KiB and more are not prefetched: keep their loop free
     * of the check (the compiler unswitches on this invariant). */
    const int pf = tl->pf.n > 0;
    const uint64_t esize = type == HC_TYPE_F16 ? 2 : 4;
    for (; c + 8 <= cols; c += 8) {
        __m256 xv[4];
        if (pf)
            hc_prefetch_lines(&tl->pf, (uint64_t)c * esize, 8 * esize);
        HC_UNROLL for (int t = 0; t < T; t++)
            xv[t] = _mm256_loadu_ps(x[t] + c);
        HC_UNROLL for (int r = 0; r < R; r++) {
            __m256 wv = load_w8(type, tl->w[r], c);
            HC_UNROLL for (int t = 0; t < T; t++)
                acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) {
            float s = hc_hsum8(acc[r][t]);
            for (int64_t k = c; k < cols; k++)
                s = fmaf(load_w1(type, tl->w[r], k), x[t][k], s);
            a->y[(t0 + t) * a->rows + tl->out[r]] = s;
        }
    }
}

/* ---- Q4_0 weights, x quantized to hc_xq4_pair ---------------------------- */

/* One pair of weight blocks (bA, bB) against one record of x: lanes 0-3 get
 * block A, lanes 4-7 block B.  Nibbles stay unsigned (maddubs and vpdpbusd
 * need an unsigned operand); the -8 offset comes back through ncorr. */
HC_ALWAYS_INLINE __m256 q4_pair(const uint8_t *bA, const uint8_t *bB, __m256i *lo, __m256i *hi)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i v = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(bA + 2))),
        _mm_loadu_si128((const __m128i *)(bB + 2)), 1);
    *lo = _mm256_and_si256(v, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    return _mm256_blend_ps(_mm256_set1_ps(hc_f16(bA)), _mm256_set1_ps(hc_f16(bB)), 0xf0);
}

HC_ALWAYS_INLINE __m256 q4_dot(__m256i lo, __m256i hi, __m256 dw, const hc_xq4_pair *xp,
                               __m256 acc)
{
    const __m256i xl = _mm256_load_si256((const __m256i *)xp->lo);
    const __m256i xh = _mm256_load_si256((const __m256i *)xp->hi);
    __m256i s = _mm256_load_si256((const __m256i *)xp->ncorr);
#if defined(__AVXVNNI__)
    /* Two instructions instead of five; the int32 sums are the same. */
    s = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(s, lo, xl), hi, xh);
#else
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i pl = _mm256_maddubs_epi16(lo, xl), ph = _mm256_maddubs_epi16(hi, xh);
    /* |lane| <= 2*15*127 each, so the int16 sum cannot overflow. */
    s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_add_epi16(pl, ph), ones));
#endif
    __m256 d = _mm256_mul_ps(dw, _mm256_load_ps(xp->d));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc);
}

HC_ALWAYS_INLINE void tile_q4(const int R, const int T, tile *tl, const hc_cpu_mm_args *a,
                              int64_t t0)
{
    const int64_t nb = a->cols / 32, np = nb / 2; /* whole pairs */
    const hc_xq4_pair *x[4];
    __m256 acc[8][4];

    for (int t = 0; t < T; t++)
        x[t] = (const hc_xq4_pair *)(a->xq + (size_t)(t0 + t) * a->xq_stride);
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (int64_t p = 0; p < np; p++) {
        const size_t offA = (size_t)(2 * p) * HC_Q4_0_BLOCK_BYTES;
        hc_prefetch_lines(&tl->pf, offA, 2 * HC_Q4_0_BLOCK_BYTES);
        HC_UNROLL for (int r = 0; r < R; r++) {
            __m256i lo, hi;
            __m256 dw = q4_pair(tl->w[r] + offA, tl->w[r] + offA + HC_Q4_0_BLOCK_BYTES, &lo, &hi);
            HC_UNROLL for (int t = 0; t < T; t++)
                acc[r][t] = q4_dot(lo, hi, dw, &x[t][p], acc[r][t]);
        }
    }
    if (nb & 1) {
        /* The odd last block pairs with itself; x's half B is zero there. */
        const size_t offA = (size_t)(nb - 1) * HC_Q4_0_BLOCK_BYTES;
        for (int r = 0; r < R; r++) {
            __m256i lo, hi;
            __m256 dw = q4_pair(tl->w[r] + offA, tl->w[r] + offA, &lo, &hi);
            for (int t = 0; t < T; t++)
                acc[r][t] = q4_dot(lo, hi, dw, &x[t][np], acc[r][t]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            a->y[(t0 + t) * a->rows + tl->out[r]] = hc_hsum8(acc[r][t]);
}

/* ---- Q8_0 weights, x quantized to int16 ----------------------------------- */

HC_ALWAYS_INLINE void tile_q8(const int R, const int T, tile *tl, const hc_cpu_mm_args *a,
                              int64_t t0)
{
    const int64_t nb = a->cols / 32;
    const int16_t *xq[4];
    const float *xd[4];
    __m256 acc[8][4];

    for (int t = 0; t < T; t++) {
        const uint8_t *base = a->xq + (size_t)(t0 + t) * a->xq_stride;
        xq[t] = (const int16_t *)base;
        xd[t] = (const float *)(base + nb * 64);
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        hc_prefetch_lines(&tl->pf, (uint64_t)b * HC_Q8_0_BLOCK_BYTES, HC_Q8_0_BLOCK_BYTES);
        HC_UNROLL for (int r = 0; r < R; r++) {
            const uint8_t *blk = tl->w[r] + (size_t)b * HC_Q8_0_BLOCK_BYTES;
            /* Sign-extend to int16 and use madd: no sign tricks needed and
             * |w*x| pairs stay far from int32 limits. */
            __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + 2)));
            __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + 18)));
            __m256 dw = _mm256_set1_ps(hc_f16(blk));
            HC_UNROLL for (int t = 0; t < T; t++) {
                const __m256i *xv = (const __m256i *)(xq[t] + b * 32);
                __m256i s = _mm256_add_epi32(_mm256_madd_epi16(w0, _mm256_load_si256(xv)),
                                             _mm256_madd_epi16(w1, _mm256_load_si256(xv + 1)));
                __m256 d = _mm256_mul_ps(dw, _mm256_load_ps(xd[t] + 8 * b));
                acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            a->y[(t0 + t) * a->rows + tl->out[r]] = hc_hsum8(acc[r][t]);
}

/* ---- Q6_K weights, x quantized to hc_xq6_block ----------------------------- */

/* Block k (elements 32k..32k+31) of a Q6_K super-block, in element order:
 * q = low nibbles | high 2 bits << 4, unsigned 0..63 (plugin.h's layout:
 * k = 4h + g reads ql[64h + 32(g & 1) + l] and field g of qh[32h + l]). */
HC_ALWAYS_INLINE __m256i q6_block(const uint8_t *blk, const int k)
{
    const int h = k / 4, g = k % 4;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
    __m256i lo = _mm256_loadu_si256((const __m256i *)(blk + 64 * h + 32 * (g & 1)));
    __m256i hi = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));
    lo = g < 2 ? _mm256_and_si256(lo, m4) : _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
    /* Field g to bits 4-5 of its byte; 16-bit shifts move nothing across a
     * byte that the mask keeps. */
    hi = g < 2 ? _mm256_slli_epi16(hi, 4 - 2 * g) : _mm256_srli_epi16(hi, 2 * g - 4);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, m2));
}

/* The int16 scales of block k: scales[2k] for its first 16 elements, then
 * scales[2k + 1]. */
HC_ALWAYS_INLINE __m256i q6_scales(__m128i sc8, const int k)
{
    const __m128i pick = _mm_add_epi8(_mm_set1_epi8((char)(2 * k)),
                                      _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick));
}

/* Per super-block and (row, token): each block of 32 adds
 * float(sum q * xq * scale) * (d * dx) to the accumulator, then the -32
 * offset is taken back for all 8 blocks at once: int32 lane k holds
 * scale[2k] bsum[2k] + scale[2k+1] bsum[2k+1], times 32 (exact: below 2^24)
 * and d * dx_k.  The integer sums are exact (|q xq| pairs <= 16002 fit
 * maddubs' int16, times |scale| <= 128 in int32). */
HC_ALWAYS_INLINE void tile_q6(const int R, const int T, tile *tl, const hc_cpu_mm_args *a,
                              int64_t t0)
{
    const int64_t nsb = a->cols / 256;
    const hc_xq6_block *x[4];
    __m256 acc[8][4];

    for (int t = 0; t < T; t++)
        x[t] = (const hc_xq6_block *)(a->xq + (size_t)(t0 + t) * a->xq_stride);
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (int64_t s = 0; s < nsb; s++) {
        const size_t off = (size_t)s * HC_Q6_K_BLOCK_BYTES;
        hc_prefetch_lines(&tl->pf, off, HC_Q6_K_BLOCK_BYTES);
        HC_UNROLL for (int r = 0; r < R; r++) {
            const uint8_t *blk = tl->w[r] + off;
            const __m128i sc8 = _mm_loadu_si128((const __m128i *)(blk + 192));
            const __m256 dw = _mm256_set1_ps(hc_f16(blk + 208));
            HC_UNROLL for (int k = 0; k < 8; k++) {
                const __m256i q = q6_block(blk, k), sc = q6_scales(sc8, k);
                HC_UNROLL for (int t = 0; t < T; t++) {
                    const __m256i xq = _mm256_load_si256((const __m256i *)(x[t][s].q + 32 * k));
                    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xq), sc);
                    const __m256 d = _mm256_mul_ps(dw, _mm256_broadcast_ss(&x[t][s].d[k]));
                    acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[r][t]);
                }
            }
            const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
            HC_UNROLL for (int t = 0; t < T; t++) {
                const __m256i bs = _mm256_load_si256((const __m256i *)x[t][s].bsum);
                const __m256i c = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5);
                const __m256 d = _mm256_mul_ps(dw, _mm256_load_ps(x[t][s].d));
                acc[r][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(c), d, acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            a->y[(t0 + t) * a->rows + tl->out[r]] = hc_hsum8(acc[r][t]);
}

#else /* generic: plain C, one row and one token at a time ------------------ */

static float dot_generic(hc_type type, const uint8_t *row, const float *x, int64_t cols)
{
    float s[4] = {0, 0, 0, 0};
    int64_t c = 0;

    switch (type) {
    case HC_TYPE_F32: {
        const float *w = (const float *)row;
        for (; c + 4 <= cols; c += 4)
            for (int k = 0; k < 4; k++)
                s[k] += w[c + k] * x[c + k];
        for (; c < cols; c++)
            s[0] += w[c] * x[c];
        break;
    }
    case HC_TYPE_F16:
        for (; c + 4 <= cols; c += 4)
            for (int k = 0; k < 4; k++)
                s[k] += hc_f16(row + 2 * (c + k)) * x[c + k];
        for (; c < cols; c++)
            s[0] += hc_f16(row + 2 * c) * x[c];
        break;
    case HC_TYPE_Q4_0:
        for (int64_t b = 0; b < cols / 32; b++) {
            const uint8_t *blk = row + b * HC_Q4_0_BLOCK_BYTES;
            const float *xb = x + b * 32;
            float bs = 0;
            for (int j = 0; j < 16; j++)
                bs += (float)((blk[2 + j] & 0x0f) - 8) * xb[j] +
                      (float)((blk[2 + j] >> 4) - 8) * xb[j + 16];
            s[b & 3] += hc_f16(blk) * bs;
        }
        break;
    case HC_TYPE_Q8_0:
        for (int64_t b = 0; b < cols / 32; b++) {
            const uint8_t *blk = row + b * HC_Q8_0_BLOCK_BYTES;
            const float *xb = x + b * 32;
            float bs = 0;
            for (int j = 0; j < 32; j++)
                bs += (float)(int8_t)blk[2 + j] * xb[j];
            s[b & 3] += hc_f16(blk) * bs;
        }
        break;
    case HC_TYPE_Q6_K:
        /* Element 128h + 32g + l: ql[64h + 32(g & 1) + l]'s nibble (low for
         * g < 2), field g of qh[32h + l] (plugin.h); its group of 16 (one
         * scale) is 8h + 2g + l / 16, so the groups come in order. */
        for (int64_t b = 0; b < cols / 256; b++) {
            const uint8_t *blk = row + b * HC_Q6_K_BLOCK_BYTES;
            const int8_t *sc = (const int8_t *)(blk + 192);
            float bs = 0;
            for (int h = 0; h < 2; h++)
                for (int g = 0; g < 4; g++) {
                    const uint8_t *ql = blk + 64 * h + 32 * (g & 1), *qh = blk + 128 + 32 * h;
                    const float *xg = x + b * 256 + 128 * h + 32 * g;
                    const int lo_shift = g < 2 ? 0 : 4;
                    for (int l0 = 0; l0 < 32; l0 += 16) {
                        float gs = 0;
                        for (int l = l0; l < l0 + 16; l++) {
                            const int q = (ql[l] >> lo_shift & 0x0f) | (qh[l] >> (2 * g) & 3) << 4;
                            gs += (float)(q - 32) * xg[l];
                        }
                        bs += (float)sc[8 * h + 2 * g + l0 / 16] * gs;
                    }
                }
            s[b & 3] += hc_f16(blk + 208) * bs;
        }
        break;
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}
#endif

/* Instantiations: (R rows, T tokens) with R*T accumulators. */
#if defined(HC_CPU_KERNELS_AVX2)
#define TILE_FNS(name, body)                                                                        \
    static void name##_4x1(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(4, 1); }     \
    static void name##_1x1(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(1, 1); }     \
    static void name##_1x2(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(1, 2); }     \
    static void name##_1x3(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(1, 3); }     \
    static void name##_1x4(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(1, 4); }     \
    static void name##_2x4(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(2, 4); }
#define TILE_FN_8X1(name, body)                                                                     \
    static void name##_8x1(tile *tl, const hc_cpu_mm_args *a, int64_t t0) { body(8, 1); }

#define BODY_F32(R, T) tile_float(HC_TYPE_F32, R, T, tl, a, t0)
#define BODY_F16(R, T) tile_float(HC_TYPE_F16, R, T, tl, a, t0)
#define BODY_Q4(R, T) tile_q4(R, T, tl, a, t0)
#define BODY_Q8(R, T) tile_q8(R, T, tl, a, t0)
#define BODY_Q6(R, T) tile_q6(R, T, tl, a, t0)
TILE_FNS(f32, BODY_F32)
TILE_FNS(f16, BODY_F16)
TILE_FNS(q4, BODY_Q4)
TILE_FNS(q8, BODY_Q8)
TILE_FNS(q6, BODY_Q6)
TILE_FN_8X1(f32, BODY_F32)
TILE_FN_8X1(f16, BODY_F16)

typedef void (*tile_fn)(tile *, const hc_cpu_mm_args *, int64_t);
/* [type][shape]: 0 = 4x1, 1..4 = 1xT, 5 = 2x4, 6 = 8x1 (F32/F16 only: the
 * integer kernels need more registers per row) */
static tile_fn pick(hc_type t, int shape)
{
    static const tile_fn tab[5][7] = {
        {f32_4x1, f32_1x1, f32_1x2, f32_1x3, f32_1x4, f32_2x4, f32_8x1},
        {f16_4x1, f16_1x1, f16_1x2, f16_1x3, f16_1x4, f16_2x4, f16_8x1},
        {q4_4x1, q4_1x1, q4_1x2, q4_1x3, q4_1x4, q4_2x4, q4_4x1},
        {q8_4x1, q8_1x1, q8_1x2, q8_1x3, q8_1x4, q8_2x4, q8_4x1},
        {q6_4x1, q6_1x1, q6_1x2, q6_1x3, q6_1x4, q6_2x4, q6_4x1},
    };
    int ti = t == HC_TYPE_F32    ? 0
             : t == HC_TYPE_F16  ? 1
             : t == HC_TYPE_Q4_0 ? 2
             : t == HC_TYPE_Q8_0 ? 3
                                 : 4;
    return tab[ti][shape];
}
#endif

static int64_t row_at(const hc_cpu_mm_args *a, int64_t k)
{
    return a->idx ? a->idx[k] : k;
}

/* Rows k0..k1-1 of a's row list (or of W). */
static void mm_rows(const hc_cpu_mm_args *a, int64_t k0, int64_t k1)
{
#if defined(HC_CPU_KERNELS_AVX2)
    /* Software prefetch pays where the arithmetic is heavy enough to hide
     * it behind (the 8-bit kernels) or rows are too short for the hardware
     * prefetcher to find the stream; float rows of 2 KiB and more stream
     * faster without it. */
    const int prefetch = a->type == HC_TYPE_Q4_0 || a->type == HC_TYPE_Q8_0 ||
                         a->type == HC_TYPE_Q6_K || a->row_bytes < 2048;
    const int wide = a->type == HC_TYPE_F32 || a->type == HC_TYPE_F16 ? 8 : 4;
    int64_t ahead = ((int64_t)PF_BYTES + (int64_t)a->row_bytes - 1) / (int64_t)a->row_bytes;
    ahead = ahead > PF_TILES * wide ? ahead : PF_TILES * wide;
    for (int64_t tb = 0; tb < a->n; tb += TOKEN_BLOCK) {
        const int64_t te = a->n - tb < TOKEN_BLOCK ? a->n : tb + TOKEN_BLOCK;
        for (int64_t k = k0; k < k1;) {
            tile tl;
            /* One token: 8 rows (float weights) or 4 rows (integer kernels,
             * which need more registers per row) at once, for independent
             * FMA chains.  Several tokens: 2 rows x 4 tokens, so each weight
             * load feeds 4 FMAs. */
            const int64_t nt = te - tb, nr = k1 - k;
            int R = 1;
            if (nt == 1 && nr >= wide)
                R = wide;
            else if (nt == 1 && nr >= 4)
                R = 4;
            else if (nt >= 4 && nr >= 2)
                R = 2;
            for (int r = 0; r < R; r++) {
                tl.out[r] = row_at(a, k + r);
                tl.w[r] = a->w + (size_t)tl.out[r] * a->row_bytes;
            }
            tl.pf.n = 0;
            for (int64_t j = k + ahead; prefetch && j < k + ahead + R && j < k1; j++)
                tl.pf.p[tl.pf.n++] = a->w + (size_t)row_at(a, j) * a->row_bytes;
            for (int64_t t = tb; t < te;) {
                const int64_t left = te - t;
                if (R >= 4) {
                    pick(a->type, R == 8 ? 6 : 0)(&tl, a, t);
                    t += 1;
                } else if (R == 2 && left >= 4) {
                    pick(a->type, 5)(&tl, a, t);
                    t += 4;
                } else {
                    /* Rows of a 2-row tile finish their last tokens alone. */
                    const int T = left < 4 ? (int)left : 4;
                    for (int r = 0; r < R; r++) {
                        tile one = {{tl.w[r]}, {tl.out[r]}, {.n = 0}};
                        if (r < tl.pf.n)
                            one.pf.p[one.pf.n++] = tl.pf.p[r];
                        pick(a->type, T)(&one, a, t);
                    }
                    t += T;
                }
                tl.pf.n = 0; /* requested once: later tokens reuse the rows */
            }
            k += R;
        }
    }
#else
    for (int64_t k = k0; k < k1; k++) {
        const int64_t r = row_at(a, k);
        const uint8_t *row = a->w + (size_t)r * a->row_bytes;
        for (int64_t t = 0; t < a->n; t++)
            a->y[t * a->rows + r] = dot_generic(a->type, row, a->x + t * a->cols, a->cols);
    }
#endif
}

void HC_CPU_MM_TASK(void *args, int ith, int nth)
{
    const hc_cpu_mm_args *a = args;
    int64_t k0, k1;

    /* ith: a part, claimed in order (hc_cpu_pool_run_parts). */
    hc_cpu_split_tapered(a->idx ? a->n_idx : a->rows, ith, nth, 4, &k0, &k1);
    mm_rows(a, k0, k1);
}

void HC_CPU_MM_BATCH_TASK(void *args, int ith, int nth)
{
    const hc_cpu_mm_batch_args *b = args;
    int64_t g0, g1;

    /* The products' rows one after the other, split as one op; a part
     * that spans a boundary does the end of one and the start of the next. */
    hc_cpu_split_tapered(b->start[b->n], ith, nth, 4, &g0, &g1);
    for (int i = 0; i < b->n && g0 < g1; i++) {
        const int64_t lo = g0 > b->start[i] ? g0 : b->start[i];
        const int64_t hi = g1 < b->start[i + 1] ? g1 : b->start[i + 1];
        if (lo < hi)
            mm_rows(&b->op[i], lo - b->start[i], hi - b->start[i]);
    }
}
