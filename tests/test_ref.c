/*
 * Unit tests of the reference kernels (core/ref).  Every expected value is
 * worked out by hand in the comments or computed by an independent route
 * (ldexp for fp16 values, exact midpoints for rounding, closed-form rotations
 * and softmaxes), never by calling the code under test a second way.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

/* ---- fp16 --------------------------------------------------------------- */

/* The value of a half by its definition: (-1)^s * 2^(e-15) * (1 + m/1024),
 * or 2^-14 * m/1024 when e == 0.  (Infinity and nan handled by callers.) */
static double half_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp((double)m, -24) : ldexp(1024.0 + m, e - 25);
    return s ? -v : v;
}

START_TEST(fp16_known_values)
{
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0x3c00), 1.0f);
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0xc000), -2.0f);
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0x7bff), 65504.0f);
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0x0001), ldexpf(1.0f, -24));
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0x0400), ldexpf(1.0f, -14));
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0x03ff), ldexpf(1023.0f, -24));
    ck_assert_float_eq(hc_scalar_fp16_to_fp32(0x3555), 1365.0f / 4096.0f); /* 1+341/1024 over 4 */
    float nz = hc_scalar_fp16_to_fp32(0x8000);
    ck_assert(nz == 0.0f && signbit(nz));
    ck_assert(isinf(hc_scalar_fp16_to_fp32(0x7c00)) && hc_scalar_fp16_to_fp32(0x7c00) > 0);
    ck_assert(isinf(hc_scalar_fp16_to_fp32(0xfc00)) && hc_scalar_fp16_to_fp32(0xfc00) < 0);
    ck_assert(isnan(hc_scalar_fp16_to_fp32(0x7e00)));
    ck_assert(isnan(hc_scalar_fp16_to_fp32(0x7c01)));

    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(1.0f), 0x3c00);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(-2.0f), 0xc000);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(0.0f), 0x0000);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(-0.0f), 0x8000);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(65504.0f), 0x7bff);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(65519.99f), 0x7bff); /* below the midpoint 65520 */
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(65520.0f), 0x7c00);  /* tie to even: inf */
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(1e6f), 0x7c00);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(-INFINITY), 0xfc00);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(ldexpf(1.0f, -24)), 0x0001);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(ldexpf(1.0f, -25)), 0x0000); /* tie to even: 0 */
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(ldexpf(1.5f, -25)), 0x0001);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(ldexpf(3.0f, -25)), 0x0002); /* 1.5 ulp: tie to 2 */
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(1e-10f), 0x0000);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(ldexpf(1.0f, -140)), 0x0000); /* float subnormal */
    /* 1 + 2^-11 is the midpoint of 1 and 1+2^-10: ties to even (1.0). */
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    ck_assert_uint_eq(hc_scalar_fp32_to_fp16(1.0f + ldexpf(3.0f, -11)), 0x3c02);
    uint16_t n = hc_scalar_fp32_to_fp16(NAN);
    ck_assert((n & 0x7c00) == 0x7c00 && (n & 0x3ff) != 0);
    /* A nan whose payload lives only in the low 13 bits must stay a nan. */
    uint32_t low_nan_bits = 0x7f800001u;
    float low_nan;
    memcpy(&low_nan, &low_nan_bits, sizeof low_nan);
    n = hc_scalar_fp32_to_fp16(low_nan);
    ck_assert((n & 0x7c00) == 0x7c00 && (n & 0x3ff) != 0);
}
END_TEST

/* Every one of the 65536 halves decodes to its defined value and encodes
 * back to the same bits. */
START_TEST(fp16_all_halves_round_trip)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = hc_scalar_fp16_to_fp32(h);
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        if (e == 0x1f && m != 0) {
            ck_assert_msg(isnan(f), "0x%04x", h);
            uint16_t back = hc_scalar_fp32_to_fp16(f);
            ck_assert_msg((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0, "0x%04x", h);
            ck_assert_uint_eq(back & 0x8000, h & 0x8000);
            continue;
        }
        if (e == 0x1f) {
            ck_assert_msg(isinf(f) && (signbit(f) != 0) == (h >> 15), "0x%04x", h);
        } else {
            ck_assert_msg((double)f == half_value(h), "0x%04x: %g vs %g", h, f, half_value(h));
            ck_assert_msg((signbit(f) != 0) == (h >> 15), "0x%04x sign", h);
        }
        ck_assert_msg(hc_scalar_fp32_to_fp16(f) == h, "0x%04x -> %g -> 0x%04x", h, f,
                      hc_scalar_fp32_to_fp16(f));
    }
}
END_TEST

/* Rounding at every gap between consecutive positive halves: the exact
 * midpoint goes to the even neighbour, one float step either side goes to
 * the nearer one.  The gap above 65504 is treated as ending at 65536 (the
 * value inf stands for when rounding), which is IEEE's overflow rule. */
START_TEST(fp16_rounding_midpoints)
{
    for (uint32_t lo = 0; lo < 0x7c00; lo++) {
        uint32_t hi = lo + 1;
        double vlo = half_value((uint16_t)lo);
        double vhi = hi == 0x7c00 ? 65536.0 : half_value((uint16_t)hi);
        /* A half has 11 significant bits; the midpoint needs 12: exact in float. */
        float mid = (float)((vlo + vhi) / 2.0);
        ck_assert((double)mid == (vlo + vhi) / 2.0);
        uint32_t even = (lo & 1) ? hi : lo;
        for (int sgn = 0; sgn < 2; sgn++) {
            float s = sgn ? -1.0f : 1.0f;
            uint16_t sb = sgn ? 0x8000 : 0;
            ck_assert_msg(hc_scalar_fp32_to_fp16(s * mid) == (uint16_t)(sb | even),
                          "midpoint of 0x%04x: got 0x%04x", lo, hc_scalar_fp32_to_fp16(s * mid));
            ck_assert_msg(hc_scalar_fp32_to_fp16(s * nextafterf(mid, 0.0f)) == (uint16_t)(sb | lo),
                          "below midpoint of 0x%04x", lo);
            ck_assert_msg(hc_scalar_fp32_to_fp16(s * nextafterf(mid, INFINITY)) ==
                              (uint16_t)(sb | hi),
                          "above midpoint of 0x%04x", lo);
        }
    }
}
END_TEST

/* ---- quantization ------------------------------------------------------- */

/* Q8_0 block with d = 2^-4 exactly: x = q/16 for chosen q, so the encoder
 * must reproduce q exactly and the decoder must return x exactly. */
START_TEST(q8_0_block_layout)
{
    int8_t q[32];
    float x[32], back[32];
    uint8_t blk[HC_Q8_0_BLOCK_BYTES];
    for (int j = 0; j < 32; j++)
        q[j] = (int8_t)(j * 8 - 127 + (j % 3)); /* spans -127 .. 122 */
    q[5] = 127;                               /* +127 appears too */
    for (int j = 0; j < 32; j++)
        x[j] = (float)q[j] / 16.0f;
    /* amax = 127/16, d = amax/127 = 1/16; fp16(1/16) = exponent 11 -> 0x2c00. */
    hc_scalar_quantize_row(HC_TYPE_Q8_0, x, blk, 32);
    ck_assert_uint_eq(blk[0] | (blk[1] << 8), 0x2c00);
    for (int j = 0; j < 32; j++)
        ck_assert_int_eq((int8_t)blk[2 + j], q[j]);
    hc_scalar_dequantize_row(HC_TYPE_Q8_0, blk, back, 32);
    for (int j = 0; j < 32; j++)
        ck_assert_float_eq(back[j], x[j]);
    /* All zeros: d = 0 and every q = 0 (no division by zero). */
    memset(x, 0, sizeof x);
    hc_scalar_quantize_row(HC_TYPE_Q8_0, x, blk, 32);
    for (int j = 0; j < HC_Q8_0_BLOCK_BYTES; j++)
        ck_assert_uint_eq(blk[j], 0);
}
END_TEST

/* Q4_0 by hand: the element of largest magnitude is -1, so d = -1/-8 =
 * 0.125 (fp16 0x3000) and x = 0.125 * (q - 8).  Byte j = q[j] | q[j+16]<<4. */
START_TEST(q4_0_block_layout)
{
    int q[32];
    float x[32], back[32];
    uint8_t blk[HC_Q4_0_BLOCK_BYTES];
    for (int j = 0; j < 32; j++)
        q[j] = (j * 7 + 3) % 16;
    q[9] = 0; /* -1.0: the extreme */
    for (int j = 0; j < 32; j++)
        x[j] = 0.125f * (float)(q[j] - 8);
    hc_scalar_quantize_row(HC_TYPE_Q4_0, x, blk, 32);
    ck_assert_uint_eq(blk[0] | (blk[1] << 8), 0x3000);
    for (int j = 0; j < 16; j++)
        ck_assert_uint_eq(blk[2 + j], (unsigned)(q[j] | (q[j + 16] << 4)));
    hc_scalar_dequantize_row(HC_TYPE_Q4_0, blk, back, 32);
    for (int j = 0; j < 32; j++)
        ck_assert_float_eq(back[j], x[j]);

    /* Positive extreme +1: d = 1/-8 = -0.125 (fp16 0xb000); +1 -> q 0,
     * -0.875 -> q 15, -1 (same magnitude, found later) -> 16, clamped to 15,
     * i.e. decodes to -0.875; 0.5 -> -4 + 8 = 4. */
    memset(x, 0, sizeof x);
    x[0] = 1.0f;
    x[1] = -0.875f;
    x[17] = -1.0f;
    x[2] = 0.5f;
    hc_scalar_quantize_row(HC_TYPE_Q4_0, x, blk, 32);
    ck_assert_uint_eq(blk[0] | (blk[1] << 8), 0xb000);
    ck_assert_uint_eq(blk[2 + 0], 0x80);        /* q0 = 0, q16 = 8 (x = 0) */
    ck_assert_uint_eq(blk[2 + 1], 0xf | 0xf0);  /* q1 = 15, q17 = 15 (clamped) */
    ck_assert_uint_eq(blk[2 + 2], 4 | 0x80);
    hc_scalar_dequantize_row(HC_TYPE_Q4_0, blk, back, 32);
    ck_assert_float_eq(back[0], 1.0f);
    ck_assert_float_eq(back[1], -0.875f);
    ck_assert_float_eq(back[17], -0.875f);
    ck_assert_float_eq(back[2], 0.5f);
    ck_assert_float_eq(back[3], 0.0f);
}
END_TEST

/* Q6_K block offsets, from the layout in plugin.h. */
enum { Q6_QL = 0, Q6_QH = 128, Q6_SC = 192, Q6_D = 208 };

/* Q6_K decoding by hand.  d = 0.5 (fp16 0x3800), ql[k] = k, every qh byte
 * 0xe4 (2-bit fields 0, 1, 2, 3 from the bottom), scales[j] = j - 8:
 *   element   0: h 0, g 0, l  0: ql[0] = 0 low nibble 0, field 0 -> q 0;
 *                scale[0] = -8: 0.5 * -8 * (0 - 32) = 128
 *   element  37: h 0, g 1, l  5: ql[37] low nibble 5, field 1 -> q 21;
 *                scale[2] = -6: 0.5 * -6 * -11 = 33
 *   element 100: h 0, g 3, l  4: ql[36] high nibble 2, field 3 -> q 50;
 *                scale[6] = -2: 0.5 * -2 * 18 = -18
 *   element 200: h 1, g 2, l  8: ql[72] high nibble 4, field 2 -> q 36;
 *                scale[12] = 4: 0.5 * 4 * 4 = 8
 *   element 255: h 1, g 3, l 31: ql[127] high nibble 7, field 3 -> q 55;
 *                scale[15] = 7: 0.5 * 7 * 23 = 80.5
 * Then every element of two blocks of arbitrary bytes against ggml's
 * layout written as it is documented there: per half of 128, the 32
 * columns l of the four quarters use ql[l] low, ql[l + 32] low, ql[l]
 * high, ql[l + 32] high with qh[l]'s fields 0..3 and scales 2 apart. */
START_TEST(q6_k_block_layout)
{
    uint8_t blk[2 * HC_Q6_K_BLOCK_BYTES];
    float got[512];
    ck_assert_uint_eq(hc_type_row_size(HC_TYPE_Q6_K, 512), 420);
    ck_assert_uint_eq(hc_type_row_size(HC_TYPE_Q6_K, 255), 0);
    for (int k = 0; k < 128; k++)
        blk[Q6_QL + k] = (uint8_t)k;
    memset(blk + Q6_QH, 0xe4, 64);
    for (int j = 0; j < 16; j++)
        blk[Q6_SC + j] = (uint8_t)(int8_t)(j - 8);
    blk[Q6_D] = 0x00;
    blk[Q6_D + 1] = 0x38;
    hc_scalar_dequantize_row(HC_TYPE_Q6_K, blk, got, 256);
    ck_assert_float_eq(got[0], 128.0f);
    ck_assert_float_eq(got[37], 33.0f);
    ck_assert_float_eq(got[100], -18.0f);
    ck_assert_float_eq(got[200], 8.0f);
    ck_assert_float_eq(got[255], 80.5f);

    for (int b = 0; b < 2; b++) {
        uint8_t *p = blk + b * HC_Q6_K_BLOCK_BYTES;
        for (int k = 0; k < 192; k++)
            p[k] = (uint8_t)(k * 37 + 11 + 101 * b);
        for (int j = 0; j < 16; j++)
            p[Q6_SC + j] = (uint8_t)(j * 23 + 5 * b); /* both signs, -128 .. 127 */
        p[Q6_D] = 0x66; /* d = fp16 0x2e66 (b 0), 0xae66 (b 1) */
        p[Q6_D + 1] = b ? 0xae : 0x2e;
    }
    hc_scalar_dequantize_row(HC_TYPE_Q6_K, blk, got, 512);
    for (int b = 0; b < 2; b++) {
        const uint8_t *p = blk + b * HC_Q6_K_BLOCK_BYTES;
        /* 0x2e66: exponent 11, mantissa 0x266 = 614: 2^-4 * (1 + 614/1024) */
        const double d = (b ? -1.0 : 1.0) * ldexp(1024.0 + 614.0, -4 - 10);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = p + Q6_QL + 64 * h, *qh = p + Q6_QH + 32 * h;
            const int8_t *sc = (const int8_t *)(p + Q6_SC) + 8 * h;
            for (int l = 0; l < 32; l++) {
                const int q[4] = {(ql[l] & 15) | (qh[l] & 3) << 4,
                                  (ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4,
                                  (ql[l] >> 4) | (qh[l] >> 4 & 3) << 4,
                                  (ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4};
                for (int g = 0; g < 4; g++) {
                    const int i = 256 * b + 128 * h + 32 * g + l;
                    const double want = d * sc[l / 16 + 2 * g] * (q[g] - 32);
                    ck_assert_msg((double)got[i] == want, "element %d: %.9g, want %.9g", i,
                                  (double)got[i], want);
                }
            }
        }
    }
}
END_TEST

/* Q6_K encoding of values the format holds exactly: d = 2^-6, one group's
 * scale -128 (the largest), the others anything smaller, and every group
 * with one element at q = 0 (its extreme, -32 steps).  The encoder must
 * find exactly these bytes. */
START_TEST(q6_k_exact_round_trip)
{
    uint8_t want[HC_Q6_K_BLOCK_BYTES], blk[HC_Q6_K_BLOCK_BYTES];
    int8_t sc[16];
    int q[256];
    float x[256], back[256];
    for (int j = 0; j < 16; j++)
        sc[j] = (int8_t)(j == 5 ? -128 : (j * 29) % 255 - 127); /* |sc| <= 127 elsewhere */
    for (int i = 0; i < 256; i++)
        q[i] = i % 16 == (i / 16) % 16 ? 0 : 1 + (i * 13) % 63; /* one 0 per group */
    memset(want, 0, sizeof want);
    for (int i = 0; i < 256; i++) {
        const int h = i / 128, g = i % 128 / 32, l = i % 32;
        want[Q6_QL + 64 * h + 32 * (g & 1) + l] |= (uint8_t)((q[i] & 15) << (g < 2 ? 0 : 4));
        want[Q6_QH + 32 * h + l] |= (uint8_t)((q[i] >> 4) << (2 * g));
        x[i] = (float)ldexp((double)sc[i / 16] * (q[i] - 32), -6);
    }
    for (int j = 0; j < 16; j++)
        want[Q6_SC + j] = (uint8_t)sc[j];
    want[Q6_D] = 0x00; /* 2^-6: exponent 9 -> 0x2400 */
    want[Q6_D + 1] = 0x24;
    hc_scalar_quantize_row(HC_TYPE_Q6_K, x, blk, 256);
    for (int k = 0; k < HC_Q6_K_BLOCK_BYTES; k++)
        ck_assert_msg(blk[k] == want[k], "byte %d: 0x%02x, want 0x%02x", k, blk[k], want[k]);
    hc_scalar_dequantize_row(HC_TYPE_Q6_K, blk, back, 256);
    for (int i = 0; i < 256; i++)
        ck_assert_float_eq(back[i], x[i]);

    /* All zeros: d = 0, scales 0, every q = 32 (ql 0, qh fields 2 = 0xaa). */
    memset(x, 0, sizeof x);
    hc_scalar_quantize_row(HC_TYPE_Q6_K, x, blk, 256);
    for (int k = 0; k < HC_Q6_K_BLOCK_BYTES; k++)
        ck_assert_uint_eq(blk[k], (k >= Q6_QH && k < Q6_SC ? 0xaa : 0));
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float rnd(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Random rows: each element's error is within the step bound of its block.
 *  Q8_0: rounding gives d/2, and storing d in fp16 (relative error <= 2^-11)
 *        moves q*d by at most 127 * d * 2^-11 = 0.062 d: bound 0.57 d.
 *  Q4_0: d/2 likewise plus 8 * |d| * 2^-11, but an element of the opposite
 *        sign to the extreme can clamp, losing up to one whole step:
 *        bound 1.01 |d|, with d = amax / 8.
 *  F16:  relative 2^-11 (round to nearest). */
START_TEST(quantize_error_bounds)
{
    enum { COLS = 4096 };
    static float x[COLS], back[COLS];
    static uint8_t row[COLS * 4];
    for (int c = 0; c < COLS; c++)
        x[c] = rnd() * (1.0f + (float)(c / 32)); /* block scales differ */
    x[100] = 0.0f;

    hc_scalar_quantize_row(HC_TYPE_Q8_0, x, row, COLS);
    hc_scalar_dequantize_row(HC_TYPE_Q8_0, row, back, COLS);
    double se = 0, ss = 0;
    for (int b = 0; b < COLS / 32; b++) {
        double amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmax(amax, fabs(x[b * 32 + j]));
        for (int j = 0; j < 32; j++) {
            int c = b * 32 + j;
            ck_assert_msg(fabs(back[c] - x[c]) <= 0.57 * amax / 127, "q8_0 elem %d", c);
            se += (back[c] - x[c]) * (back[c] - x[c]);
            ss += (double)x[c] * x[c];
        }
    }
    /* Uniform rounding error of step d: variance d^2/12 against a signal of
     * variance amax^2/3 -> NMSE ~ 1/(4*127^2) = 1.6e-5. */
    ck_assert_msg(se / ss < 3e-5, "q8_0 nmse %g", se / ss);

    hc_scalar_quantize_row(HC_TYPE_Q4_0, x, row, COLS);
    hc_scalar_dequantize_row(HC_TYPE_Q4_0, row, back, COLS);
    se = ss = 0;
    for (int b = 0; b < COLS / 32; b++) {
        double amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmax(amax, fabs(x[b * 32 + j]));
        for (int j = 0; j < 32; j++) {
            int c = b * 32 + j;
            ck_assert_msg(fabs(back[c] - x[c]) <= 1.01 * amax / 8, "q4_0 elem %d", c);
            se += (back[c] - x[c]) * (back[c] - x[c]);
            ss += (double)x[c] * x[c];
        }
    }
    /* Same argument with 8 steps: ~1/(4*64) = 4e-3 (plus clamping). */
    ck_assert_msg(se / ss < 8e-3, "q4_0 nmse %g", se / ss);

    /* Q6_K: each element within one step of its group (half a step but for
     * the clamp at q = 63), the step d * scale read from the block; and the
     * step never shorter than the group's max / 32 but by the 127 clamp
     * (1/128) and fp16's rounding of d (2^-11).  A group clamped to 127 can
     * see |x| / step up to 32.27, which its clamp to 31 misses by 1.27
     * steps: bound 1.3 steps. */
    hc_scalar_quantize_row(HC_TYPE_Q6_K, x, row, COLS);
    hc_scalar_dequantize_row(HC_TYPE_Q6_K, row, back, COLS);
    se = ss = 0;
    for (int c = 0; c < COLS; c++) {
        const uint8_t *blk = row + (c / 256) * HC_Q6_K_BLOCK_BYTES;
        const double d = hc_scalar_fp16_to_fp32((uint16_t)(blk[208] | blk[209] << 8));
        const double step = fabs(d * (int8_t)blk[192 + c % 256 / 16]);
        double gmax = 0;
        for (int k = c / 16 * 16; k < c / 16 * 16 + 16; k++)
            gmax = fmax(gmax, fabs(x[k]));
        ck_assert_msg(fabs(back[c] - x[c]) <= step * 1.3, "q6_k elem %d", c);
        ck_assert_msg(step >= gmax / 32 * (1 - 1.0 / 128 - 1.0 / 2048), "q6_k step %d", c);
        se += (back[c] - x[c]) * (back[c] - x[c]);
        ss += (double)x[c] * x[c];
    }
    /* 32 steps per sign and a group's scale within ~1% of its amax / 32:
     * ~1/(4*32^2) = 2.4e-4. */
    ck_assert_msg(se / ss < 5e-4, "q6_k nmse %g", se / ss);

    hc_scalar_quantize_row(HC_TYPE_F16, x, row, COLS);
    hc_scalar_dequantize_row(HC_TYPE_F16, row, back, COLS);
    for (int c = 0; c < COLS; c++)
        /* (below 2^-14 the step is fixed at 2^-24: half of it absolute) */
        ck_assert(fabs(back[c] - x[c]) <= fmax(fabs(x[c]) * ldexp(1.0, -11), ldexp(1.0, -25)));

    hc_scalar_quantize_row(HC_TYPE_F32, x, row, COLS);
    hc_scalar_dequantize_row(HC_TYPE_F32, row, back, COLS);
    ck_assert(memcmp(back, x, sizeof x) == 0);
}
END_TEST

/* ---- matrix ops --------------------------------------------------------- */

/* W (2x3) = [[1,2,3],[-1,0.5,4]], x0 = [1,1,1], x1 = [2,0,-1]:
 * y0 = [6, 3.5], y1 = [2-3, -2-4] = [-1, -6]. */
static const float W23[6] = {1, 2, 3, -1, 0.5f, 4};
static const float X23[6] = {1, 1, 1, 2, 0, -1};

START_TEST(matmul_by_hand)
{
    float y[4];
    hc_scalar_matmul(HC_TYPE_F32, W23, 2, 3, X23, 2, y);
    ck_assert_float_eq(y[0], 6.0f);
    ck_assert_float_eq(y[1], 3.5f);
    ck_assert_float_eq(y[2], -1.0f);
    ck_assert_float_eq(y[3], -6.0f);

    /* The same in F16 (all values exact in half). */
    uint16_t w16[6];
    for (int i = 0; i < 6; i++)
        w16[i] = hc_scalar_fp32_to_fp16(W23[i]);
    hc_scalar_matmul(HC_TYPE_F16, w16, 2, 3, X23, 2, y);
    ck_assert_float_eq(y[0], 6.0f);
    ck_assert_float_eq(y[3], -6.0f);
    ck_assert_double_eq(hc_scalar_dot_row(HC_TYPE_F16, w16 + 3, X23 + 3, 3), -6.0);
}
END_TEST

/* Q8_0 dot by hand: one block with d = 0.5 (fp16 0x3800), q[j] = j - 16,
 * x = 1 everywhere: sum = 0.5 * sum(j - 16, j < 32) = 0.5 * -16 = -8. */
START_TEST(dot_q8_0_by_hand)
{
    uint8_t blk[2 * HC_Q8_0_BLOCK_BYTES];
    float x[64];
    for (int b = 0; b < 2; b++) {
        blk[b * 34] = 0x00;
        blk[b * 34 + 1] = 0x38;
        for (int j = 0; j < 32; j++)
            blk[b * 34 + 2 + j] = (uint8_t)(int8_t)(j - 16);
    }
    for (int c = 0; c < 64; c++)
        x[c] = c < 32 ? 1.0f : 2.0f;
    /* block 1 sees x = 2: -16; total -24 */
    ck_assert_double_eq(hc_scalar_dot_row(HC_TYPE_Q8_0, blk, x, 64), -24.0);

    /* Q6_K, d = 1 (0x3c00): scales[j] = 1 for even j, -2 for odd j, every q
     * = 33 (+1: ql 0x11, qh fields 2 = 0xaa): weights 1 and -2 in runs of
     * 16; with x = 1 for the first 32 and 2 after: 16 - 32 + 14 * (16 * 2 -
     * 16 * 4) / 2 = -16 - 224 = -240. */
    uint8_t b6[HC_Q6_K_BLOCK_BYTES];
    float x6[256];
    memset(b6, 0x11, 128);
    memset(b6 + 128, 0xaa, 64);
    for (int j = 0; j < 16; j++)
        b6[192 + j] = (uint8_t)(int8_t)(j % 2 ? -2 : 1);
    b6[208] = 0x00;
    b6[209] = 0x3c;
    for (int c = 0; c < 256; c++)
        x6[c] = c < 32 ? 1.0f : 2.0f;
    ck_assert_double_eq(hc_scalar_dot_row(HC_TYPE_Q6_K, b6, x6, 256), -240.0);

    /* Q4_0, d = 1 (0x3c00), every byte 0x9f: low nibble 15 (+7) for
     * elements 0..15, high nibble 9 (+1) for 16..31; with x = 1: 16*7 + 16 = 128. */
    uint8_t b4[HC_Q4_0_BLOCK_BYTES];
    b4[0] = 0x00;
    b4[1] = 0x3c;
    memset(b4 + 2, 0x9f, 16);
    ck_assert_double_eq(hc_scalar_dot_row(HC_TYPE_Q4_0, b4, x, 32), 128.0);
}
END_TEST

START_TEST(matvec_rows_by_hand)
{
    /* 3 rows: listed {2, 0}; row 1 must stay untouched (sentinel 99). */
    const float w[9] = {1, 0, 0, 0, 1, 0, 1, 1, 1};
    const float x[6] = {1, 2, 3, -1, -2, -3};
    const int32_t idx[2] = {2, 0};
    float y[6] = {99, 99, 99, 99, 99, 99};
    hc_scalar_matvec_rows(HC_TYPE_F32, w, 3, 3, x, 2, idx, 2, y);
    ck_assert_float_eq(y[0], 1.0f);
    ck_assert_float_eq(y[1], 99.0f);
    ck_assert_float_eq(y[2], 6.0f);
    ck_assert_float_eq(y[3], -1.0f);
    ck_assert_float_eq(y[4], 99.0f);
    ck_assert_float_eq(y[5], -6.0f);
}
END_TEST

START_TEST(axpy_rows_by_hand)
{
    /* Wt 3x2 = [[1,2],[10,20],[100,200]], h = [1, 5, 0.5] for one token,
     * rows {0, 2}: y += 1*[1,2] + 0.5*[100,200] = [51, 102], start y = [1,1]. */
    const float wt[6] = {1, 2, 10, 20, 100, 200};
    const float h[6] = {1, 5, 0.5f, 2, 2, 2};
    const int32_t idx[2] = {0, 2};
    float y[4] = {1, 1, 0, 0};
    hc_scalar_axpy_rows(HC_TYPE_F32, wt, 3, 2, h, 2, idx, 2, y);
    ck_assert_float_eq(y[0], 52.0f);
    ck_assert_float_eq(y[1], 103.0f);
    /* token 1: 2*[1,2] + 2*[100,200] = [202, 404] */
    ck_assert_float_eq(y[2], 202.0f);
    ck_assert_float_eq(y[3], 404.0f);
    /* An empty list leaves y alone. */
    hc_scalar_axpy_rows(HC_TYPE_F32, wt, 3, 2, h, 2, idx, 0, y);
    ck_assert_float_eq(y[0], 52.0f);
}
END_TEST

/* Longer than one chunk of columns (256), so the chunk walk is exercised:
 * with W = all ones in F16 and h = 1 for rows {1,3}, every y[c] gains 2. */
START_TEST(axpy_rows_long_row)
{
    enum { ROWS = 4, COLS = 600 };
    static uint16_t wt[ROWS * COLS];
    static float y[COLS];
    const float h[ROWS] = {7, 1, 7, 1};
    const int32_t idx[2] = {3, 1};
    for (int i = 0; i < ROWS * COLS; i++)
        wt[i] = 0x3c00;
    for (int c = 0; c < COLS; c++)
        y[c] = (float)c;
    hc_scalar_axpy_rows(HC_TYPE_F16, wt, ROWS, COLS, h, 1, idx, 2, y);
    for (int c = 0; c < COLS; c++)
        ck_assert_float_eq(y[c], (float)c + 2.0f);
}
END_TEST

/* ---- layer ops ---------------------------------------------------------- */

START_TEST(rmsnorm_by_hand)
{
    /* x = [3, 4]: mean square 12.5; y = x / sqrt(12.5) * w. */
    const float x[4] = {3, 4, 0, 2};
    const float w[2] = {1, 2};
    float y[4];
    hc_scalar_rmsnorm(x, w, y, 2, 2, 0.0f);
    ck_assert_float_eq_tol(y[0], 3.0 / sqrt(12.5), 1e-6);
    ck_assert_float_eq_tol(y[1], 8.0 / sqrt(12.5), 1e-6);
    /* [0, 2]: mean square 2 + eps 2 = 4 -> /2 */
    hc_scalar_rmsnorm(x + 2, w, y, 1, 2, 2.0f);
    ck_assert_float_eq_tol(y[0], 0.0, 1e-7);
    ck_assert_float_eq_tol(y[1], 2.0, 1e-6);
}
END_TEST

START_TEST(rope_known_vectors)
{
    /* head_dim 4, n_rot 4, base 10000: theta_0 = pos, theta_1 = pos / 100. */
    const int32_t pos1[1] = {1};
    float x[4] = {1, 0, 1, 0};
    hc_scalar_rope(x, 1, 1, 4, 4, pos1, 10000.0f, 1.0f, HC_ROPE_NORM);
    ck_assert_float_eq_tol(x[0], cos(1.0), 1e-6);
    ck_assert_float_eq_tol(x[1], sin(1.0), 1e-6);
    ck_assert_float_eq_tol(x[2], cos(0.01), 1e-6);
    ck_assert_float_eq_tol(x[3], sin(0.01), 1e-6);

    /* NEOX pairs (0,2) and (1,3). */
    float y[4] = {1, 1, 0, 0};
    hc_scalar_rope(y, 1, 1, 4, 4, pos1, 10000.0f, 1.0f, HC_ROPE_NEOX);
    ck_assert_float_eq_tol(y[0], cos(1.0), 1e-6);
    ck_assert_float_eq_tol(y[1], cos(0.01), 1e-6);
    ck_assert_float_eq_tol(y[2], sin(1.0), 1e-6);
    ck_assert_float_eq_tol(y[3], sin(0.01), 1e-6);

    /* n_rot 2 < head_dim 4, two heads, two tokens at pos {0, 3}, freq_scale
     * 0.5: only dims 0,1 of each head turn, by 0 and 1.5 rad; dims 2,3 stay. */
    const int32_t pos2[2] = {0, 3};
    float z[16];
    for (int i = 0; i < 16; i++)
        z[i] = (i % 4 == 0) ? 2.0f : (float)i;
    hc_scalar_rope(z, 2, 2, 4, 2, pos2, 10000.0f, 0.5f, HC_ROPE_NORM);
    ck_assert_float_eq(z[0], 2.0f); /* pos 0: identity */
    ck_assert_float_eq(z[1], 1.0f);
    for (int head = 0; head < 2; head++) {
        float *v = z + 8 + 4 * head;
        double x0 = 2.0, x1 = 8 + 4 * head + 1;
        ck_assert_float_eq_tol(v[0], x0 * cos(1.5) - x1 * sin(1.5), 1e-5);
        ck_assert_float_eq_tol(v[1], x0 * sin(1.5) + x1 * cos(1.5), 1e-5);
        ck_assert_float_eq(v[2], (float)(8 + 4 * head + 2));
        ck_assert_float_eq(v[3], (float)(8 + 4 * head + 3));
    }
}
END_TEST

START_TEST(attention_by_hand)
{
    /* head_dim 2, 2 query heads sharing 1 KV head (GQA).  KV positions:
     * k0 = [1,0], k1 = [0,1]; v0 = [1,2], v1 = [3,4].
     * Token A at pos 1, q = [1,0] (head 0) and [0,2] (head 1), scale 1:
     *   head 0: scores 1, 0 -> weights e/(e+1), 1/(e+1)
     *   head 1: scores 0, 2 -> weights 1/(1+e^2), e^2/(1+e^2)
     * Token B at pos 0: only v0, whatever q is. */
    const float k[4] = {1, 0, 0, 1};
    const float v[4] = {1, 2, 3, 4};
    const float q[8] = {1, 0, 0, 2, 5, 5, -5, 5};
    const int32_t pos[2] = {1, 0};
    float out[8];
    hc_scalar_attention(q, k, v, out, 2, pos, 2, 1, 2, 1.0f);
    double e = exp(1.0), a0 = e / (e + 1), a1 = 1 / (e + 1);
    ck_assert_float_eq_tol(out[0], a0 * 1 + a1 * 3, 1e-6);
    ck_assert_float_eq_tol(out[1], a0 * 2 + a1 * 4, 1e-6);
    double e2 = exp(2.0), b0 = 1 / (1 + e2), b1 = e2 / (1 + e2);
    ck_assert_float_eq_tol(out[2], b0 * 1 + b1 * 3, 1e-6);
    ck_assert_float_eq_tol(out[3], b0 * 2 + b1 * 4, 1e-6);
    for (int i = 4; i < 8; i += 2) {
        ck_assert_float_eq_tol(out[i], 1.0, 1e-7);
        ck_assert_float_eq_tol(out[i + 1], 2.0, 1e-7);
    }
    /* scale 0.5 on head 1 of token A: scores 0, 1 -> the head-0 weights swapped. */
    hc_scalar_attention(q, k, v, out, 1, pos, 2, 1, 2, 0.5f);
    ck_assert_float_eq_tol(out[2], a1 * 1 + a0 * 3, 1e-6);

    /* GQA 4/2, head_dim 1, q = 1, two positions: k = [0,0] then [1,-1] per
     * KV head, v = [0,0] then [1,1].  Heads 0,1 use KV head 0 (scores 0, 1:
     * out = e/(1+e)); heads 2,3 use KV head 1 (scores 0, -1: out = 1/(1+e)). */
    const float k2[4] = {0, 0, 1, -1};
    const float v2[4] = {0, 0, 1, 1};
    const float q2[4] = {1, 1, 1, 1};
    const int32_t pos2[1] = {1};
    hc_scalar_attention(q2, k2, v2, out, 1, pos2, 4, 2, 1, 1.0f);
    ck_assert_float_eq_tol(out[0], a0, 1e-6);
    ck_assert_float_eq_tol(out[1], a0, 1e-6);
    ck_assert_float_eq_tol(out[2], a1, 1e-6);
    ck_assert_float_eq_tol(out[3], a1, 1e-6);
}
END_TEST

/* head_dim 100 (> the 64-wide output chunk) with 2 KV heads: value columns
 * are v[p][d] = d for KV head 0 and 1000 for head 1, so every output equals
 * that constant whatever the weights: checks chunking and head mapping. */
START_TEST(attention_wide_head)
{
    enum { HD = 100, NH = 4, NKV = 2, NP = 7 };
    static float q[NH * HD], k[NP * NKV * HD], v[NP * NKV * HD], out[NH * HD];
    for (int i = 0; i < NH * HD; i++)
        q[i] = rnd();
    for (int p = 0; p < NP; p++)
        for (int d = 0; d < NKV * HD; d++) {
            k[p * NKV * HD + d] = rnd();
            v[p * NKV * HD + d] = d < HD ? (float)d : 1000.0f;
        }
    const int32_t pos[1] = {NP - 1};
    hc_scalar_attention(q, k, v, out, 1, pos, NH, NKV, HD, 0.1f);
    for (int h = 0; h < NH; h++)
        for (int d = 0; d < HD; d++)
            ck_assert_float_eq_tol(out[h * HD + d], h < 2 ? (double)d : 1000.0, 1e-3);
}
END_TEST

START_TEST(elementwise_by_hand)
{
    const float x[4] = {-1, 0, 0.5f, 3};
    const float u[4] = {2, -2, 4, -1};
    float y[4];
    hc_scalar_unary(HC_UNARY_RELU_SHIFT, x, y, 4, 0.25f);
    ck_assert_float_eq(y[0], 0.0f);
    ck_assert_float_eq(y[1], 0.0f);
    ck_assert_float_eq(y[2], 0.25f);
    ck_assert_float_eq(y[3], 2.75f);
    hc_scalar_unary(HC_UNARY_SILU, x, y, 4, 0.0f);
    ck_assert_float_eq_tol(y[0], -1.0 / (1.0 + exp(1.0)), 1e-7);
    ck_assert_float_eq(y[1], 0.0f);
    ck_assert_float_eq_tol(y[3], 3.0 / (1.0 + exp(-3.0)), 1e-6);
    hc_scalar_unary(HC_UNARY_SCALE, x, y, 4, -2.0f);
    ck_assert_float_eq(y[3], -6.0f);
    hc_scalar_unary(99, x, y, 4, 0.0f);
    ck_assert(isnan(y[0]));

    hc_scalar_binary(HC_BINARY_ADD, x, u, y, 4);
    ck_assert_float_eq(y[0], 1.0f);
    ck_assert_float_eq(y[3], 2.0f);
    hc_scalar_binary(HC_BINARY_MUL, x, u, y, 4);
    ck_assert_float_eq(y[0], -2.0f);
    ck_assert_float_eq(y[2], 2.0f);

    hc_scalar_glu(HC_GLU_SILU, x, u, y, 4, 0.0f);
    ck_assert_float_eq_tol(y[3], 3.0 / (1.0 + exp(-3.0)) * -1.0, 1e-6);
    ck_assert_float_eq_tol(y[0], -1.0 / (1.0 + exp(1.0)) * 2.0, 1e-6);
    hc_scalar_glu(HC_GLU_RELU, x, u, y, 4, 0.25f);
    ck_assert_float_eq(y[0], 0.0f);
    ck_assert_float_eq(y[2], 1.0f);   /* 0.25 * 4 */
    ck_assert_float_eq(y[3], -2.75f); /* 2.75 * -1: u is not clipped */
    hc_scalar_glu(HC_GLU_RELU_BOTH, x, u, y, 4, 0.25f);
    ck_assert_float_eq(y[2], 1.0f);
    ck_assert_float_eq(y[3], 0.0f); /* u clipped to 0 */
}
END_TEST

static Suite *ref_suite(void)
{
    Suite *s = suite_create("ref");
    TCase *tc = tcase_create("fp16");
    tcase_add_test(tc, fp16_known_values);
    tcase_add_test(tc, fp16_all_halves_round_trip);
    tcase_add_test(tc, fp16_rounding_midpoints);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("quant");
    tcase_add_test(tc, q8_0_block_layout);
    tcase_add_test(tc, q4_0_block_layout);
    tcase_add_test(tc, q6_k_block_layout);
    tcase_add_test(tc, q6_k_exact_round_trip);
    tcase_add_test(tc, quantize_error_bounds);
    tcase_add_test(tc, dot_q8_0_by_hand);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("ops");
    tcase_add_test(tc, matmul_by_hand);
    tcase_add_test(tc, matvec_rows_by_hand);
    tcase_add_test(tc, axpy_rows_by_hand);
    tcase_add_test(tc, axpy_rows_long_row);
    tcase_add_test(tc, rmsnorm_by_hand);
    tcase_add_test(tc, rope_known_vectors);
    tcase_add_test(tc, attention_by_hand);
    tcase_add_test(tc, attention_wide_head);
    tcase_add_test(tc, elementwise_by_hand);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ref_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
