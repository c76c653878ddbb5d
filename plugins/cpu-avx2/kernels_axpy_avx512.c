/*
 * The group step of axpy_rows for one token of Q4_0 (axpy1_q4 in
 * kernels_axpy.c: the sparse-decode down projection, and dense decode's too,
 * since PWRI stores down transposed) with AVX-512 (F + BW).
 *
 * Built only into the avx2 plugin, with -mavx512f -mavx512bw -mavx512vl,
 * and called only when the CPU has them (hc_cpu_use_avx512).  It computes
 * exactly what the AVX2 group step (q4_group in kernels_axpy.c) computes,
 * bit for bit, because every y element goes through the same operations in
 * the same order:
 *
 *   acc = y;  acc = fma(2 + q/64, 64*h*d, acc) for the rows of a group in
 *   list order;  y = acc - 2.125 * sum(64*h*d of the group, in row order)
 *
 * (see the comment above axpy1_q4 for why).  Only the work per instruction
 * changes:
 *
 *  - AVX2 needs 12 vector instructions per 32 weights and leaves the FMAs
 *    one chain per 8 columns, so a block waits on FMA latency; here a
 *    block takes 6 (one byte shuffle, one shift, two ternary logic ops that
 *    mask the nibble and set the exponent at once, two FMAs), and 4 blocks
 *    are in flight per row, 8 independent chains;
 *  - the byte shuffle keeps the columns in their natural order, so y (a
 *    slice's partial) is updated in place (AVX2 permutes a copy of y into
 *    its decode order).
 *
 * Measured on one thread in L2: 1.7-2.0 ns per row and block against
 * 2.5 ns for AVX2.  From DRAM on two threads the op is mostly memory-bound,
 * and dense decode of a TinyLlama-shape PWRI file gains about 3%.
 */
#include "kernels_common.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)

/* Blocks per step of the inner loop: 2 accumulators each. */
#define STEP 4

/* Lane i (0..15) gets byte i of the block's 16 bytes in bits 16..23 and
 * zeros elsewhere (control byte 0x80).  vpshufb indexes within each 128-bit
 * lane, and every lane holds the same 16 bytes (broadcast), so lane L's
 * dwords 4L..4L+3 pick bytes 4L..4L+3. */
HC_ALWAYS_INLINE __m512i byte_to_bits16_ctl(void)
{
#define C(i) (int)(0x80008080u | ((unsigned)(i) << 16))
    return _mm512_setr_epi32(C(0), C(1), C(2), C(3), C(4), C(5), C(6), C(7), C(8), C(9), C(10),
                             C(11), C(12), C(13), C(14), C(15));
#undef C
}

/* One block: columns 0..15 (low nibbles) and 16..31 (high nibbles) as the
 * floats 2 + q/64, i.e. q in bits 16..19 under the exponent byte 0x40. */
HC_ALWAYS_INLINE void q4_block(const uint8_t *blk, __m512i ctl, __m512i nib, __m512i top,
                               __m512 *lo, __m512 *hi)
{
    const __m512i q = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(blk + 2)));
    const __m512i b = _mm512_shuffle_epi8(q, ctl);
    /* 0xEA: (a & b) | c.  The high half first: its shift leaves b for
     * the low half to overwrite in place (no register copy). */
    *hi = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_srli_epi32(b, 4), nib, top, 0xEA));
    *lo = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(b, nib, top, 0xEA));
}

/* The fp16 scales of blocks [0, min(n, 16)) of a row times h64, gathered
 * (a table lookup per block costs more: the table is 256 KiB).  Lanes past
 * n are 0 and read nothing. */
HC_ALWAYS_INLINE __m512 q4_scales16(const uint8_t *row, int n, float h64)
{
    const __m512i at = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(HC_Q4_0_BLOCK_BYTES));
    const __mmask16 on = n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), on, at,
                                                  (const void *)row, 1);
    /* The low 16 bits of each lane are the fp16 scale. */
    return _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)), _mm512_set1_ps(h64));
}

/* G rows into blocks [0, nb) of y (w[i]: row i at the first block);
 * h64[i] = 64 * h of row i. */
HC_ALWAYS_INLINE void q4_group512(const int G, const uint8_t *const *w, const float *h64, float *y,
                                  int nb, hc_prefetch *pf)
{
    _Alignas(64) float sc[HC_AXPY_GROUP][HC_AXPY_Q4_CHUNK];
    _Alignas(64) float corr[HC_AXPY_Q4_CHUNK];
    const __m512i ctl = byte_to_bits16_ctl();
    const __m512i nib = _mm512_set1_epi32(0x000f0000), top = _mm512_set1_epi32(0x40000000);

    /* Scales as axpy1_q4 stages them: fp16 -> float (exact), times 64*h
     * (one rounding); the correction sums them from 0 in row order. */
    for (int k = 0; k < nb; k += 16) {
        __m512 sum = _mm512_setzero_ps();
        for (int i = 0; i < G; i++) {
            const __m512 s = q4_scales16(w[i] + (size_t)k * HC_Q4_0_BLOCK_BYTES, nb - k, h64[i]);
            _mm512_store_ps(&sc[i][k], s);
            sum = _mm512_add_ps(sum, s);
        }
        _mm512_store_ps(&corr[k], _mm512_mul_ps(sum, _mm512_set1_ps(HC_AXPY_Q4_OFFSET)));
    }
    int k = 0;
    for (; k + STEP <= nb; k += STEP) {
        float *yk = y + (size_t)k * 32;
        __m512 acc[2 * STEP];
        for (int j = 0; j < 2 * STEP; j++)
            acc[j] = _mm512_loadu_ps(yk + 16 * j);
        hc_prefetch_lines(pf, (uint64_t)k * HC_Q4_0_BLOCK_BYTES, STEP * HC_Q4_0_BLOCK_BYTES);
        for (int i = 0; i < G; i++) {
            const uint8_t *row = w[i] + (size_t)k * HC_Q4_0_BLOCK_BYTES;
            for (int j = 0; j < STEP; j++) {
                __m512 lo, hi;
                q4_block(row + (size_t)j * HC_Q4_0_BLOCK_BYTES, ctl, nib, top, &lo, &hi);
                const __m512 s = _mm512_set1_ps(sc[i][k + j]);
                acc[2 * j] = _mm512_fmadd_ps(lo, s, acc[2 * j]);
                acc[2 * j + 1] = _mm512_fmadd_ps(hi, s, acc[2 * j + 1]);
            }
        }
        for (int j = 0; j < STEP; j++) {
            const __m512 c = _mm512_set1_ps(corr[k + j]);
            _mm512_storeu_ps(yk + 32 * j, _mm512_sub_ps(acc[2 * j], c));
            _mm512_storeu_ps(yk + 32 * j + 16, _mm512_sub_ps(acc[2 * j + 1], c));
        }
    }
    for (; k < nb; k++) {
        float *yk = y + (size_t)k * 32;
        __m512 a0 = _mm512_loadu_ps(yk), a1 = _mm512_loadu_ps(yk + 16);
        hc_prefetch_lines(pf, (uint64_t)k * HC_Q4_0_BLOCK_BYTES, HC_Q4_0_BLOCK_BYTES);
        for (int i = 0; i < G; i++) {
            __m512 lo, hi;
            q4_block(w[i] + (size_t)k * HC_Q4_0_BLOCK_BYTES, ctl, nib, top, &lo, &hi);
            const __m512 s = _mm512_set1_ps(sc[i][k]);
            a0 = _mm512_fmadd_ps(lo, s, a0);
            a1 = _mm512_fmadd_ps(hi, s, a1);
        }
        const __m512 c = _mm512_set1_ps(corr[k]);
        _mm512_storeu_ps(yk, _mm512_sub_ps(a0, c));
        _mm512_storeu_ps(yk + 16, _mm512_sub_ps(a1, c));
    }
}

void hc_cpu_axpy_q4_group_avx512(int g, const uint8_t *const *w, const float *h64, float *y,
                                 int nb, hc_prefetch *pf)
{
    /* A full group with G a constant, so the row loop can be unrolled. */
    if (g == HC_AXPY_GROUP)
        q4_group512(HC_AXPY_GROUP, w, h64, y, nb, pf);
    else
        q4_group512(g, w, h64, y, nb, pf);
}

#endif
