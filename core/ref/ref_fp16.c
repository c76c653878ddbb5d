/*
 * IEEE 754 binary16 <-> binary32 by bit manipulation.
 *
 * Done on the bit patterns rather than with _Float16 or F16C so the result
 * is the same with every compiler and CPU, and so the reference shares no
 * conversion code with the plugins it judges.
 */
#include "ref.h"

#include <string.h>

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float hc_scalar_fp16_to_fp32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0x1f) /* inf or nan: keep the payload, in the top mantissa bits */
        return f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) /* normal: rebias the exponent 15 -> 127 */
        return f32_from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
    if (mant == 0)
        return f32_from_bits(sign);
    /* Subnormal half: mant * 2^-24.  Every one is a normal float: shift the
     * leading 1 up to the hidden-bit position, lowering the exponent. */
    int e = -14;
    while (!(mant & 0x400u)) {
        mant <<= 1;
        e--;
    }
    mant &= 0x3ffu;
    return f32_from_bits(sign | ((uint32_t)(e + 127) << 23) | (mant << 13));
}

/* value >> shift, rounded to nearest with ties to even. */
static uint32_t shift_round_even(uint32_t value, int shift)
{
    uint32_t kept = value >> shift;
    uint32_t rest = value & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return kept;
}

uint16_t hc_scalar_fp32_to_fp16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    int exp = (int)((u >> 23) & 0xffu);
    uint32_t mant = u & 0x7fffffu;

    if (exp == 0xff) {
        if (mant == 0)
            return (uint16_t)(sign | 0x7c00u);
        /* nan: keep the top payload bits and force the quiet bit so a
         * payload living only in the low bits cannot turn into inf. */
        return (uint16_t)(sign | 0x7c00u | 0x200u | (mant >> 13));
    }

    int e = exp - 127 + 15; /* the half's biased exponent */
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e >= 1) {
        /* Normal half.  Rounding may carry out of the mantissa into the
         * exponent, which is exactly right (and 0x7bff + 1 is inf). */
        uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
        uint32_t rest = mant & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    /* Subnormal half (or zero).  The value is m * 2^(exp - 150) with the
     * hidden bit in m; in units of 2^-24 that is m >> (126 - exp). */
    if (exp == 0)
        return sign; /* float subnormals are far below half's smallest step */
    int shift = 126 - exp; /* 14 for e == 0, growing as e goes negative */
    if (shift > 24)
        return sign; /* below half the smallest subnormal: rounds to zero */
    uint32_t m = mant | 0x800000u;
    /* A carry to 0x400 becomes the smallest normal, also exactly right. */
    return (uint16_t)(sign | shift_round_even(m, shift));
}
