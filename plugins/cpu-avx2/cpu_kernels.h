/*
 * The compute kernels of the CPU plugin, as seen by the op layer.
 *
 * The op layer (ops_*.c, built without ISA flags) validates arguments and
 * hands an argument block to a task that the thread pool runs as
 * fn(args, ith, nth).  The tasks live in kernels_*.c, which the avx2 variant
 * builds with -mavx2 -mfma -mf16c and the generic variant builds plain.
 *
 * Determinism: every task splits its output statically, each output element
 * is written by exactly one thread, and the arithmetic that produces an
 * element never depends on which thread or which tile shape computes it, so
 * results are bit-identical for any thread count.
 */
#ifndef HC_CPU_KERNELS_H
#define HC_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "hotcold/plugin.h"

/* Once per process, before any kernel runs (fills the fp16 table). */
void hc_cpu_kernels_init(void);

/* [*begin, *end) of `total` items for thread ith of nth, cut at multiples
 * of `align` (the last thread takes the remainder). */
static inline void hc_cpu_split(int64_t total, int ith, int nth, int64_t align, int64_t *begin,
                                int64_t *end)
{
    int64_t units = (total + align - 1) / align;
    int64_t b = units * ith / nth * align, e = units * (ith + 1) / nth * align;
    *begin = b < total ? b : total;
    *end = e < total ? e : total;
}

/* The same for parts that threads claim in order (hc_cpu_pool_run_parts),
 * sized to shrink: part k ends at units * (1 - ((n-k-1)/n)^2), so the first
 * parts are about twice the average and the last ones about 1/n of it.
 * Whichever thread runs out of work first waits at most for a small part;
 * equal parts left it waiting for up to a whole average one at the end of
 * every op (tapering made a sparse decode on two threads 2.7% faster), and
 * more, smaller parts would each start without prefetched rows. */
static inline int64_t hc_cpu_tapered_cut(int64_t units, int k, int n)
{
    const int64_t left = n - k;
    return units - units * left * left / ((int64_t)n * n);
}

static inline void hc_cpu_split_tapered(int64_t total, int part, int n, int64_t align,
                                        int64_t *begin, int64_t *end)
{
    int64_t units = (total + align - 1) / align;
    int64_t b = hc_cpu_tapered_cut(units, part, n) * align;
    int64_t e = hc_cpu_tapered_cut(units, part + 1, n) * align;
    *begin = b < total ? b : total;
    *end = e < total ? e : total;
}

/* ---- products with weights --------------------------------------------- */

/* Bytes of x (one token of `cols` floats) after the per-call quantization
 * that weights of type t use; 0 when t works on F32 x directly. */
size_t hc_cpu_xq_bytes(hc_type t, int64_t cols);

typedef struct hc_cpu_quant_args {
    hc_type type;
    const float *x;          /* n x cols */
    int64_t cols, n;
    uint8_t *xq;             /* n x xq_stride bytes */
    size_t xq_stride;
} hc_cpu_quant_args;
/* Quantizes the tokens of x (split over tokens). */
void hc_cpu_quant_task(void *args, int ith, int nth);

typedef struct hc_cpu_mm_args {
    hc_type type;
    const uint8_t *w;        /* rows x row_bytes */
    uint64_t row_bytes;
    int64_t rows, cols;
    const float *x;          /* n x cols (types without quantized x) */
    const uint8_t *xq;       /* n x xq_stride (types with quantized x) */
    size_t xq_stride;
    int64_t n;
    const int32_t *idx;      /* NULL: all rows (matmul); else the listed rows */
    int64_t n_idx;
    float *y;                /* n x rows */
} hc_cpu_mm_args;
/* y[t][r] = W[r] . x[t] for the rows (split over rows). */
void hc_cpu_mm_task(void *args, int ith, int nth);
/* The same with AVX-VNNI's vpdpbusd for the 8-bit products (Q4_0): built
 * when the compiler has -mavxvnni (HC_CPU_HAVE_VNNI), used when the CPU has
 * it; bit-identical results (the integer sums are exact either way). */
void hc_cpu_mm_task_vnni(void *args, int ith, int nth);

/* Several products of one x as one job (matmul_batch): their rows are
 * concatenated, op[i] owning units start[i]..start[i+1]-1. */
#define HC_CPU_MM_BATCH_MAX 4
typedef struct hc_cpu_mm_batch_args {
    int n;
    hc_cpu_mm_args op[HC_CPU_MM_BATCH_MAX];
    int64_t start[HC_CPU_MM_BATCH_MAX + 1];
} hc_cpu_mm_batch_args;
void hc_cpu_mm_batch_task(void *args, int ith, int nth);
void hc_cpu_mm_batch_task_vnni(void *args, int ith, int nth);

typedef struct hc_cpu_axpy_args {
    hc_type type;
    const uint8_t *wt;       /* rows x row_bytes */
    uint64_t row_bytes;
    int64_t rows, cols;
    const float *h;          /* n x rows */
    int64_t n;
    const int32_t *idx;
    int64_t n_idx;
    float *y;                /* n x cols */
    int avx512;              /* one token of Q4_0 may use AVX-512 (hc_cpu_use_avx512) */
    /* Row slices (hc_cpu_axpy_slices), when it returned > 0: n_slices
     * partial vectors of cols floats, slice s = list positions
     * [s * slice_rows, (s + 1) * slice_rows).  NULL: the column split. */
    float *partial;
    int64_t n_slices, slice_rows;
} hc_cpu_axpy_args;
/* y[t][c] += h[t][idx[k]] * Wt[idx[k]][c], k in list order: split over
 * 32-column blocks, so each y element has one owner; or, with partial set,
 * the slices into their partials, which hc_cpu_axpy_reduce_task (a second
 * job) then adds to y in slice order. */
void hc_cpu_axpy_task(void *args, int ith, int nth);
void hc_cpu_axpy_reduce_task(void *args, int ith, int nth);
/* How many row slices this axpy is summed in (0: the column split), and
 * the rows of each.  Depends only on the arguments, never on threads. */
int64_t hc_cpu_axpy_slices(hc_type type, int64_t n, int64_t n_idx, int64_t *slice_rows);

/* ---- layer ops ---------------------------------------------------------- */

typedef struct hc_cpu_rmsnorm_args {
    const float *x, *w;
    float *y;
    int64_t n, dim;
    float eps;
} hc_cpu_rmsnorm_args;
void hc_cpu_rmsnorm_task(void *args, int ith, int nth); /* split over rows */

typedef struct hc_cpu_rope_args {
    float *x;
    const int32_t *pos;
    int64_t n_tok, n_head, head_dim, n_rot;
    float freq_base, freq_scale;
    int mode;
    float *scratch;          /* per thread: 2 * n_rot floats */
    const float *table;      /* one token: its cos/sin table (hc_cpu_rope_cs), or NULL */
} hc_cpu_rope_args;
void hc_cpu_rope_task(void *args, int ith, int nth); /* split over (token, head) */
/* The cos/sin table of one position: cs n_rot floats, inv n_rot/2 doubles
 * of work space.  The task computes the same values itself without one. */
void hc_cpu_rope_cs(int64_t n_rot, float freq_base, float freq_scale, int32_t pos, float *cs,
                    double *inv);

typedef struct hc_cpu_attn_args {
    const float *q, *k, *v;
    float *out;
    const int32_t *pos;
    int64_t n_tok, n_head, n_head_kv, head_dim;
    float scale;
    float *scratch;          /* per thread: scratch_stride floats of scores */
    int64_t scratch_stride;
} hc_cpu_attn_args;
void hc_cpu_attention_task(void *args, int ith, int nth); /* split over (token, head) */

typedef struct hc_cpu_eltwise_args {
    int op;                  /* hc_unary_op, hc_binary_op or hc_glu_act */
    const float *a, *b;      /* unary: a = x; binary: a, b; glu: a = g, b = u */
    float *y;
    int64_t n;
    float param;
} hc_cpu_eltwise_args;
void hc_cpu_unary_task(void *args, int ith, int nth);
void hc_cpu_binary_task(void *args, int ith, int nth);
void hc_cpu_glu_task(void *args, int ith, int nth);

#endif /* HC_CPU_KERNELS_H */
