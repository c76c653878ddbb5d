/*
 * op_cost: a rough time estimate, printed by `hotcold bench --ops` beside
 * the time it measures.  Decode ops are memory-bound, so the model is the
 * larger of bytes touched / bandwidth and multiply-adds / compute rate,
 * plus a fixed dispatch cost.  The rates are what the avx2 kernels reach
 * per thread on data in cache on a recent Xeon (~2.9 GHz): the order of
 * magnitude is what counts.
 *
 * The shape arguments are plugin.h's (at op_cost): for the weight ops the
 * weight's rows and cols and n tokens, the sparse ops priced for a list of
 * every row; for the layer ops rows x cols elements per token, n tokens.
 * -1 for what the ops refuse: axpy_rows of Q6_K.
 */
#include <stdatomic.h>

#include "cpu_plugin.h"

#define BW_PER_THREAD 30e9 /* bytes/s one core streams */
#define BW_MAX 60e9        /* what the memory system gives all cores */
#define DISPATCH_S 3e-6

/* Multiply-adds per second per thread on weights of type t. */
static double mac_rate(hc_type t)
{
#if defined(HC_CPU_VARIANT_AVX2)
    switch (t) {
    case HC_TYPE_F32: return 20e9;
    case HC_TYPE_F16: return 20e9;
    case HC_TYPE_Q8_0: return 28e9;
    case HC_TYPE_Q4_0: return 34e9;
    case HC_TYPE_Q6_K: return 24e9; /* 2/3 of Q4_0's, as measured in cache on an EPYC */
    }
    return 0;
#else
    switch (t) {
    case HC_TYPE_F32: return 5e9;
    case HC_TYPE_F16: return 2.5e9;
    case HC_TYPE_Q8_0:
    case HC_TYPE_Q4_0: return 2e9;
    case HC_TYPE_Q6_K: return 1e9;
    }
    return 0;
#endif
}

double hc_cpu_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n)
{
    if (!dev || dev->magic != HC_CPU_MAGIC_DEVICE || rows < 0 || cols < 0 || n < 0)
        return -1.0;
    int nt = atomic_load(&dev->ctx->n_threads);
    double bw = nt * BW_PER_THREAD < BW_MAX ? nt * BW_PER_THREAD : BW_MAX;
    double tok = n > 0 ? (double)n : 1.0;
    double elems = (double)rows * (double)cols;

    /* The counted ops are their base ops with the count read first. */
    if (op == HC_OP_MATVEC_ROWS_COUNTED)
        op = HC_OP_MATVEC_ROWS;
    else if (op == HC_OP_AXPY_ROWS_COUNTED)
        op = HC_OP_AXPY_ROWS;
    switch (op) {
    case HC_OP_MATMUL:
    case HC_OP_MATVEC_ROWS:
    case HC_OP_AXPY_ROWS: {
        uint64_t rb = hc_type_row_size(wtype, cols);
        double rate = mac_rate(wtype);
        if (rate == 0 || (rb == 0 && cols > 0) ||
            (op == HC_OP_AXPY_ROWS && wtype == HC_TYPE_Q6_K)) /* no kernel */
            return -1.0;
        double bytes = (double)rows * (double)rb + tok * ((double)rows + cols) * 4;
        double t_mem = bytes / bw, t_mac = elems * tok / (rate * nt);
        /* Loads overlap the arithmetic: the slower of the two bounds. */
        return DISPATCH_S + (t_mem > t_mac ? t_mem : t_mac);
    }
    case HC_OP_ATTENTION:
        /* k and v read once per query head group: count them once. */
        return DISPATCH_S + 2 * elems * 4 * tok / bw + 2 * elems * tok / (8e9 * nt);
    case HC_OP_RMSNORM:
    case HC_OP_ROPE:
    case HC_OP_UNARY:
    case HC_OP_BINARY:
    case HC_OP_GLU:
    case HC_OP_COPY:
        return DISPATCH_S + 3 * elems * 4 * tok / bw;
    case HC_OP_SELECT_ROWS: /* one scalar pass over the scores */
        return DISPATCH_S + elems * tok / 1e9;
    case HC_OP_SCATTER_ROWS: /* n rows of cols words read and written, one thread */
        return DISPATCH_S + 2 * (double)cols * 4 * tok / BW_PER_THREAD;
    default:
        return -1.0;
    }
}
