/*
 * Reference encoders/decoders for the weight types, in GGUF's block layouts
 * (see hc_type in plugin.h):
 *
 *   Q8_0: 32 elements per block = fp16 d, then int8 q[32];  x = d * q.
 *   Q4_0: 32 elements per block = fp16 d, then 16 bytes;    x = d * (q - 8),
 *         byte j holds element j in its low nibble, element j+16 in its high.
 *   Q6_K: 256 elements per block = ql[128], qh[64], int8 scales[16], fp16 d;
 *         x = d * scales[i/16] * (q - 32), q's 6 bits placed as plugin.h says.
 */
#include "ref.h"

#include <math.h>
#include <string.h>

static uint16_t read_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v); /* little-endian host, as GGUF */
    return v;
}

static void write_u16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof v);
}

static void dequantize_q8_0(const uint8_t *row, float *dst, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK8_0; b++) {
        const uint8_t *blk = row + b * HC_Q8_0_BLOCK_BYTES;
        float d = hc_scalar_fp16_to_fp32(read_u16(blk));
        for (int j = 0; j < HC_QK8_0; j++)
            dst[b * HC_QK8_0 + j] = d * (float)(int8_t)blk[2 + j];
    }
}

static void dequantize_q4_0(const uint8_t *row, float *dst, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK4_0; b++) {
        const uint8_t *blk = row + b * HC_Q4_0_BLOCK_BYTES;
        float d = hc_scalar_fp16_to_fp32(read_u16(blk));
        for (int j = 0; j < HC_QK4_0 / 2; j++) {
            int lo = blk[2 + j] & 0x0f;
            int hi = blk[2 + j] >> 4;
            dst[b * HC_QK4_0 + j] = d * (float)(lo - 8);
            dst[b * HC_QK4_0 + j + HC_QK4_0 / 2] = d * (float)(hi - 8);
        }
    }
}

/* Byte offsets inside a Q6_K block (plugin.h). */
#define Q6K_QL 0
#define Q6K_QH 128
#define Q6K_SCALES 192
#define Q6K_D 208

/* The 6-bit q of element i (0..255) of a Q6_K block. */
static int q6_k_get(const uint8_t *blk, int i)
{
    const int h = i / 128, g = i % 128 / 32, l = i % 32;
    const uint8_t lo = blk[Q6K_QL + 64 * h + 32 * (g & 1) + l];
    const uint8_t hi = blk[Q6K_QH + 32 * h + l];
    return (g < 2 ? lo & 0x0f : lo >> 4) | ((hi >> (2 * g)) & 3) << 4;
}

static void q6_k_put(uint8_t *blk, int i, int q)
{
    const int h = i / 128, g = i % 128 / 32, l = i % 32;
    uint8_t *lo = &blk[Q6K_QL + 64 * h + 32 * (g & 1) + l];
    uint8_t *hi = &blk[Q6K_QH + 32 * h + l];
    *lo |= (uint8_t)(g < 2 ? q & 0x0f : (q & 0x0f) << 4);
    *hi |= (uint8_t)((q >> 4) << (2 * g));
}

static void dequantize_q6_k(const uint8_t *row, float *dst, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK_K; b++) {
        const uint8_t *blk = row + b * HC_Q6_K_BLOCK_BYTES;
        float d = hc_scalar_fp16_to_fp32(read_u16(blk + Q6K_D));
        for (int i = 0; i < HC_QK_K; i++) {
            /* d * scale is exact (11 x 8 bits), so this rounds once. */
            float ds = d * (float)(int8_t)blk[Q6K_SCALES + i / 16];
            dst[b * HC_QK_K + i] = ds * (float)(q6_k_get(blk, i) - 32);
        }
    }
}

void hc_scalar_dequantize_row(hc_type t, const void *row, float *dst, int64_t cols)
{
    switch (t) {
    case HC_TYPE_F32:
        memcpy(dst, row, (size_t)cols * sizeof(float));
        break;
    case HC_TYPE_F16:
        for (int64_t c = 0; c < cols; c++)
            dst[c] = hc_scalar_fp16_to_fp32(read_u16((const uint8_t *)row + 2 * c));
        break;
    case HC_TYPE_Q8_0:
        dequantize_q8_0(row, dst, cols);
        break;
    case HC_TYPE_Q4_0:
        dequantize_q4_0(row, dst, cols);
        break;
    case HC_TYPE_Q6_K:
        dequantize_q6_k(row, dst, cols);
        break;
    default: /* unknown type: make any use of the result visible */
        for (int64_t c = 0; c < cols; c++)
            dst[c] = NAN;
        break;
    }
}

/* Q8_0: d = amax / 127 so the largest magnitude maps to +-127. */
static void quantize_q8_0(const float *src, uint8_t *row, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK8_0; b++) {
        const float *x = src + b * HC_QK8_0;
        uint8_t *blk = row + b * HC_Q8_0_BLOCK_BYTES;
        float amax = 0.0f;
        for (int j = 0; j < HC_QK8_0; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f;
        write_u16(blk, hc_scalar_fp32_to_fp16(d));
        for (int j = 0; j < HC_QK8_0; j++) {
            /* x/d is within [-127, 127] up to rounding; clamp for safety. */
            float q = d != 0.0f ? roundf(x[j] / d) : 0.0f;
            q = fminf(fmaxf(q, -127.0f), 127.0f);
            blk[2 + j] = (uint8_t)(int8_t)q;
        }
    }
}

/* Q4_0: q ranges 0..15, i.e. -8..7 after the offset: the range is one step
 * longer on the negative side.  Choosing d = max / -8, with max the element
 * of largest magnitude (sign kept), maps that element exactly to q = 0, so
 * the extreme value is reproduced exactly whatever its sign; values of the
 * opposite sign beyond 7*|d| clamp to q = 15. */
static void quantize_q4_0(const float *src, uint8_t *row, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK4_0; b++) {
        const float *x = src + b * HC_QK4_0;
        uint8_t *blk = row + b * HC_Q4_0_BLOCK_BYTES;
        float max = 0.0f;
        for (int j = 0; j < HC_QK4_0; j++)
            if (fabsf(x[j]) > fabsf(max))
                max = x[j];
        float d = max / -8.0f;
        write_u16(blk, hc_scalar_fp32_to_fp16(d));
        int q[HC_QK4_0];
        for (int j = 0; j < HC_QK4_0; j++) {
            /* Round half up (floor of v + 0.5), then shift into 0..15. */
            float v = d != 0.0f ? floorf(x[j] / d + 8.5f) : 8.0f;
            q[j] = (int)fminf(fmaxf(v, 0.0f), 15.0f);
        }
        for (int j = 0; j < HC_QK4_0 / 2; j++)
            blk[2 + j] = (uint8_t)(q[j] | (q[j + HC_QK4_0 / 2] << 4));
    }
}

/* The element of largest magnitude, sign kept (the first of equals). */
static float signed_max(const float *x, int n)
{
    float max = 0.0f;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > fabsf(max))
            max = x[j];
    return max;
}

/* Q6_K: q - 32 spans -32..31, so (as for Q4_0) each group of 16 wants the
 * scale s = max / -32, which makes its extreme element exactly -32 steps.
 * The int8 group scales span -128..127, so d = (the s of largest
 * magnitude) / -128, and a group's scale is s / d rounded away from zero
 * (then clamped): its step d * scale is never shorter than s (but for a
 * scale clamped to 127, by at most 1/128), so |x / step| stays within 32
 * and only an element of the extreme's opposite sign can clamp (q 64 ->
 * 63), by one step.  Then q = round(x / step) + 32.
 * ggml's quantizer differs: it searches several candidate scales per group
 * for the least weighted square error (make_qx_quants) and rounds the
 * group scales to nearest, so its bytes differ from these; both decode by
 * the same formula. */
static void quantize_q6_k(const float *src, uint8_t *row, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK_K; b++) {
        const float *x = src + b * HC_QK_K;
        uint8_t *blk = row + b * HC_Q6_K_BLOCK_BYTES;
        float s[HC_QK_K / 16];
        for (int j = 0; j < HC_QK_K / 16; j++)
            s[j] = signed_max(x + 16 * j, 16) / -32.0f;
        const float smax = signed_max(s, HC_QK_K / 16);
        /* (an all-zero block gets d = +0, not 0 / -128 = -0) */
        const uint16_t dh = hc_scalar_fp32_to_fp16(smax != 0.0f ? smax / -128.0f : 0.0f);
        const float d = hc_scalar_fp16_to_fp32(dh);
        memset(blk, 0, HC_Q6_K_BLOCK_BYTES);
        write_u16(blk + Q6K_D, dh);
        for (int j = 0; j < HC_QK_K / 16; j++) {
            const float r = d != 0.0f ? s[j] / d : 0.0f;
            const float sc = fminf(fmaxf(copysignf(ceilf(fabsf(r)), r), -128.0f), 127.0f);
            blk[Q6K_SCALES + j] = (uint8_t)(int8_t)sc;
            const float step = d * sc;
            for (int i = 16 * j; i < 16 * j + 16; i++) {
                float q = step != 0.0f ? roundf(x[i] / step) + 32.0f : 32.0f;
                q6_k_put(blk, i, (int)fminf(fmaxf(q, 0.0f), 63.0f));
            }
        }
    }
}

void hc_scalar_quantize_row(hc_type t, const float *src, void *row, int64_t cols)
{
    switch (t) {
    case HC_TYPE_F32:
        memcpy(row, src, (size_t)cols * sizeof(float));
        break;
    case HC_TYPE_F16:
        for (int64_t c = 0; c < cols; c++)
            write_u16((uint8_t *)row + 2 * c, hc_scalar_fp32_to_fp16(src[c]));
        break;
    case HC_TYPE_Q8_0:
        quantize_q8_0(src, row, cols);
        break;
    case HC_TYPE_Q4_0:
        quantize_q4_0(src, row, cols);
        break;
    case HC_TYPE_Q6_K:
        quantize_q6_k(src, row, cols);
        break;
    }
}

/* Elements decoded at a time: a multiple of every block size, small enough
 * for the stack, so the dot needs no allocation. */
#define REF_CHUNK 256

double hc_scalar_dot_row(hc_type t, const void *row, const float *x, int64_t cols)
{
    float w[REF_CHUNK];
    double sum = 0.0;
    for (int64_t c0 = 0; c0 < cols; c0 += REF_CHUNK) {
        int64_t len = cols - c0 < REF_CHUNK ? cols - c0 : REF_CHUNK;
        /* c0 is a multiple of the block size, so this is a block boundary. */
        const uint8_t *part = (const uint8_t *)row + hc_type_row_size(t, c0);
        hc_scalar_dequantize_row(t, part, w, len);
        for (int64_t c = 0; c < len; c++)
            sum += (double)w[c] * (double)x[c0 + c];
    }
    return sum;
}
