/*
 * Reference kernels: plain scalar loops in the style of llama2.c, written
 * for obviousness, not speed.  They are the independent yardstick every
 * plugin (the CPU plugin included) is tested against, so they share no code
 * with any plugin.  Dot products accumulate in double.
 *
 * Shapes and semantics are exactly those documented for the matching entry
 * of hc_plugin_ops in include/hotcold/plugin.h; pointers are host memory.
 */
#ifndef HC_CORE_REF_H
#define HC_CORE_REF_H

#include <stdint.h>

#include "hotcold/plugin.h"

/* IEEE half <-> float, by bit manipulation (round to nearest even). */
float hc_scalar_fp16_to_fp32(uint16_t h);
uint16_t hc_scalar_fp32_to_fp16(float f);

/* Decode one row of `cols` elements of type t into dst. */
void hc_scalar_dequantize_row(hc_type t, const void *row, float *dst, int64_t cols);
/* Encode one row (round to nearest, GGUF block layouts). */
void hc_scalar_quantize_row(hc_type t, const float *src, void *row, int64_t cols);

/* sum_c W[r][c] * x[c] for one row, in double. */
double hc_scalar_dot_row(hc_type t, const void *row, const float *x, int64_t cols);

void hc_scalar_matmul(hc_type t, const void *w, int64_t rows, int64_t cols, const float *x,
                      int64_t n, float *y);
void hc_scalar_matvec_rows(hc_type t, const void *w, int64_t rows, int64_t cols, const float *x,
                           int64_t n, const int32_t *idx, int64_t n_idx, float *y);
void hc_scalar_axpy_rows(hc_type t, const void *wt, int64_t rows, int64_t cols, const float *h,
                         int64_t n, const int32_t *idx, int64_t n_idx, float *y);
void hc_scalar_rmsnorm(const float *x, const float *w, float *y, int64_t n, int64_t dim, float eps);
void hc_scalar_rope(float *x, int64_t n_tok, int64_t n_head, int64_t head_dim, int64_t n_rot,
                    const int32_t *pos, float freq_base, float freq_scale, int mode);
void hc_scalar_attention(const float *q, const float *k, const float *v, float *out, int64_t n_tok,
                         const int32_t *pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                         float scale);
void hc_scalar_unary(int op, const float *x, float *y, int64_t n, float param);
void hc_scalar_binary(int op, const float *a, const float *b, float *y, int64_t n);
void hc_scalar_glu(int act, const float *g, const float *u, float *h, int64_t n, float shift);

#endif /* HC_CORE_REF_H */
