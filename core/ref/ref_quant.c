/*
 * Reference encoders/decoders for the weight types, in GGUF's block layouts
 * (see hc_type in plugin.h):
 *
 *   Q8_0: 32 elements per block = fp16 d, then int8 q[32];  x = d * q.
 *   Q4_0: 32 elements per block = fp16 d, then 16 bytes;    x = d * (q - 8),
 *         byte j holds element j in its low nibble, element j+16 in its high.
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
        float d = hc_ref_fp16_to_fp32(read_u16(blk));
        for (int j = 0; j < HC_QK8_0; j++)
            dst[b * HC_QK8_0 + j] = d * (float)(int8_t)blk[2 + j];
    }
}

static void dequantize_q4_0(const uint8_t *row, float *dst, int64_t cols)
{
    for (int64_t b = 0; b < cols / HC_QK4_0; b++) {
        const uint8_t *blk = row + b * HC_Q4_0_BLOCK_BYTES;
        float d = hc_ref_fp16_to_fp32(read_u16(blk));
        for (int j = 0; j < HC_QK4_0 / 2; j++) {
            int lo = blk[2 + j] & 0x0f;
            int hi = blk[2 + j] >> 4;
            dst[b * HC_QK4_0 + j] = d * (float)(lo - 8);
            dst[b * HC_QK4_0 + j + HC_QK4_0 / 2] = d * (float)(hi - 8);
        }
    }
}

void hc_ref_dequantize_row(hc_type t, const void *row, float *dst, int64_t cols)
{
    switch (t) {
    case HC_TYPE_F32:
        memcpy(dst, row, (size_t)cols * sizeof(float));
        break;
    case HC_TYPE_F16:
        for (int64_t c = 0; c < cols; c++)
            dst[c] = hc_ref_fp16_to_fp32(read_u16((const uint8_t *)row + 2 * c));
        break;
    case HC_TYPE_Q8_0:
        dequantize_q8_0(row, dst, cols);
        break;
    case HC_TYPE_Q4_0:
        dequantize_q4_0(row, dst, cols);
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
        write_u16(blk, hc_ref_fp32_to_fp16(d));
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
        write_u16(blk, hc_ref_fp32_to_fp16(d));
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

void hc_ref_quantize_row(hc_type t, const float *src, void *row, int64_t cols)
{
    switch (t) {
    case HC_TYPE_F32:
        memcpy(row, src, (size_t)cols * sizeof(float));
        break;
    case HC_TYPE_F16:
        for (int64_t c = 0; c < cols; c++)
            write_u16((uint8_t *)row + 2 * c, hc_ref_fp32_to_fp16(src[c]));
        break;
    case HC_TYPE_Q8_0:
        quantize_q8_0(src, row, cols);
        break;
    case HC_TYPE_Q4_0:
        quantize_q4_0(src, row, cols);
        break;
    }
}

/* Elements decoded at a time: a multiple of every block size, small enough
 * for the stack, so the dot needs no allocation. */
#define REF_CHUNK 256

double hc_ref_dot_row(hc_type t, const void *row, const float *x, int64_t cols)
{
    float w[REF_CHUNK];
    double sum = 0.0;
    for (int64_t c0 = 0; c0 < cols; c0 += REF_CHUNK) {
        int64_t len = cols - c0 < REF_CHUNK ? cols - c0 : REF_CHUNK;
        /* c0 is a multiple of the block size, so this is a block boundary. */
        const uint8_t *part = (const uint8_t *)row + hc_type_row_size(t, c0);
        hc_ref_dequantize_row(t, part, w, len);
        for (int64_t c = 0; c < len; c++)
            sum += (double)w[c] * (double)x[c0 + c];
    }
    return sum;
}
