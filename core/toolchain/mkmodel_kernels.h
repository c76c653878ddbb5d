/*
 * The per-element work of hc_mkmodel_write(), fast and bit-exact: each
 * function gives exactly the bytes (or floats) of the core/ref function it
 * replaces (test_mkmodel checks that), so files keep their bytes whatever
 * the CPU.  SIMD is picked at run time; the core keeps no ISA flags.
 */
#ifndef HC_CORE_MKMODEL_KERNELS_H
#define HC_CORE_MKMODEL_KERNELS_H

#include <stdint.h>

#include "hotcold/hotcold.h"

/* = hc_scalar_quantize_row(t, src, row, cols) for F32, F16, Q8_0, Q4_0. */
void hc_mk_quantize_row(hc_type t, const float *src, void *row, int64_t cols);

/* = hc_scalar_dequantize_row(t, row, dst, cols) for the same types. */
void hc_mk_dequantize_row(hc_type t, const void *row, float *dst, int64_t cols);

/* res[tk * res_stride] = mkmodel's 8-lane dot(a, in + tk * cols, cols) for
 * tk < n_in: the same partial sums in the same order, so the same bits. */
void hc_mk_dots(const float *a, const float *in, int64_t cols, int n_in, float *res,
                int64_t res_stride);

/* o[c] += h * row[c] for c < n: one multiply and one add per element, as
 * the scalar loop does. */
void hc_mk_axpy(float *o, float h, const float *row, int64_t n);

#endif /* HC_CORE_MKMODEL_KERNELS_H */
