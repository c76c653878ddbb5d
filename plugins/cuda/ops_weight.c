/*
 * The weight ops: matmul, matvec_rows, axpy_rows, matmul_batch and the
 * counted forms of the sparse two (ABI 1.3: the list's length is read on
 * the device, from `count`; the host never reads it, which would wait).  This
 * file checks the arguments (plugin_kit.h's checks, with the messages the
 * core shows) and queues the kernels; the arithmetic is in kernels_dot.cu (matmul,
 * matvec_rows, matmul_batch) and kernels_axpy.cu (axpy_rows), the counted
 * forms being the same kernels.
 *
 * Refused with HC_E_UNSUPPORTED (nothing queued; the core runs the call on
 * the CPU): Q6_K, which has no kernel yet, and shapes whose row count or
 * length does not fit the kernels' 32-bit grid (rows, cols > INT32_MAX).
 *
 * Row indices live in device memory and cannot be checked on the host
 * without a read-back: the kernels skip entries outside [0, rows).
 */
#include <stdio.h>

#include "cuda_plugin.h"

typedef long long ll;

hc_status hc_cu_weight_shape_ok(hc_type wtype, int64_t rows, int64_t cols, int64_t n, char *why,
                                size_t why_len)
{
    why[0] = 0;
    if (!hc_kit_type_known(wtype) || !hc_cu_kernel_has_type(wtype)) {
        snprintf(why, why_len, "weight type %s (%d) has no kernel", hc_type_name(wtype),
                 (int)wtype);
        return HC_E_UNSUPPORTED;
    }
    if (rows > INT32_MAX || cols > INT32_MAX || n > INT32_MAX) {
        snprintf(why, why_len, "shape %lld x %lld, n %lld exceeds 32-bit grids", (ll)rows,
                 (ll)cols, (ll)n);
        return HC_E_UNSUPPORTED;
    }
    return HC_OK;
}

/* Type, shape and the weight range; *row_bytes is one row's size. */
static hc_status check_weights(hc_device *dev, const char *op, hc_type t, hc_ref w, int64_t rows,
                               int64_t cols, uint64_t *row_bytes, uint64_t *bytes)
{
    hc_status st =
        hc_kit_check_weights(hc_cu_kit_fail, dev->ctx, op, t, rows, cols, row_bytes, bytes);
    return st != HC_OK ? st : hc_cu_check_ref(dev, op, "w", w, *bytes, hc_kit_weight_align(t));
}

/* matmul (no list), matvec_rows and matvec_rows_counted (a list of n_idx
 * = max_idx entries and its length at *count) share everything but the
 * row list: the checks, and the job they queue (*job; n_out 0 when there
 * is nothing to compute). */
static hc_status dot_prepare(hc_device *dev, const char *op, hc_type wtype, hc_ref w, int64_t rows,
                             int64_t cols, hc_ref x, int64_t n, const hc_ref *idx, int64_t n_idx,
                             const hc_ref *count, hc_ref y, hc_cu_dot_job *job, uint64_t *wbytes,
                             uint64_t *ybytes, uint64_t *ibytes)
{
    const char *len_name = count ? "max_idx" : "n_idx";
    uint64_t row_bytes = 0, xbytes;
    char why[160];
    hc_status st;

    *ibytes = 0;
    if ((st = check_weights(dev, op, wtype, w, rows, cols, &row_bytes, wbytes)) != HC_OK)
        return st;
    if (n < 0)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: negative token count %lld", op, (ll)n);
    if ((st = hc_cu_check_ref_n(dev, op, "x", x, n, cols, 4, &xbytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "y", y, n, rows, 4, ybytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "y", y, *ybytes, "x", x, xbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "y", y, *ybytes, "w", w, *wbytes)) != HC_OK)
        return st;
    if (idx) {
        if (n_idx < 0)
            return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: negative %s %lld", op, len_name,
                              (ll)n_idx);
        if ((st = hc_cu_check_ref_n(dev, op, "idx", *idx, n_idx, 1, 4, ibytes)) != HC_OK ||
            (st = hc_cu_check_disjoint(dev, op, "y", y, *ybytes, "idx", *idx, *ibytes)) != HC_OK)
            return st;
    }
    if (count && ((st = hc_cu_check_ref(dev, op, "count", *count, 4, 4)) != HC_OK ||
                  (st = hc_cu_check_disjoint(dev, op, "y", y, *ybytes, "count", *count, 4)) !=
                      HC_OK))
        return st;
    if ((st = hc_cu_weight_shape_ok(wtype, rows, cols, n, why, sizeof why)) != HC_OK)
        return hc_cu_fail(dev->ctx, st, "%s: %s", op, why);
    if (idx && n_idx > INT32_MAX)
        return hc_cu_fail(dev->ctx, HC_E_UNSUPPORTED, "%s: %s %lld exceeds a 32-bit grid", op,
                          len_name, (ll)n_idx);
    job->w = hc_cu_addr(w);
    job->row_bytes = row_bytes;
    job->rows = rows;
    job->idx = idx ? hc_cu_addr(*idx) : NULL;
    job->n_out = n == 0 || rows == 0 ? 0 : idx ? n_idx : rows;
    job->y = hc_cu_addr(y);
    job->count = count ? hc_cu_addr(*count) : NULL;
    return HC_OK;
}

static hc_status dot_common(hc_stream *s, const char *op, hc_type wtype, hc_ref w, int64_t rows,
                            int64_t cols, hc_ref x, int64_t n, const hc_ref *idx, int64_t n_idx,
                            const hc_ref *count, hc_ref y)
{
    hc_device *dev;
    hc_cu_dot_job job;
    uint64_t wbytes, ybytes, ibytes;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK || (st = dot_prepare(dev, op, wtype, w, rows, cols, x, n, idx, n_idx, count, y,
                                         &job, &wbytes, &ybytes, &ibytes)) != HC_OK)
        return st;
    if (job.n_out == 0)
        return HC_OK;
    int e = hc_cu_launch_dot_jobs(s->s, wtype, &job, 1, cols, hc_cu_addr(x), n);
    return hc_cu_check_queued(s, (cudaError_t)e, op);
}

hc_status hc_cu_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                       hc_ref x, int64_t n, hc_ref y)
{
    return dot_common(s, "matmul", wtype, w, rows, cols, x, n, NULL, 0, NULL, y);
}

hc_status hc_cu_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                            hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    return dot_common(s, "matvec_rows", wtype, w, rows, cols, x, n, &idx, n_idx, NULL, y);
}

/* The grid is launched for max_idx rows; the kernel reads the count. */
hc_status hc_cu_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                    int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                    int64_t max_idx, hc_ref y)
{
    return dot_common(s, "matvec_rows_counted", wtype, w, rows, cols, x, n, &idx, max_idx, &count,
                      y);
}

/* Products per call that are checked together and queued by type; a
 * longer batch is taken in turns (each turn checked before it queues). */
#define BATCH_MAX 16

typedef struct batch_item {
    hc_cu_dot_job job;
    hc_type wtype;
    hc_ref w, idx, y;
    uint64_t wbytes, ybytes, ibytes;
} batch_item;

/* y of a does not touch b's weight, list or output. */
static hc_status batch_disjoint(hc_device *dev, const char *op, const batch_item *a,
                                const batch_item *b)
{
    hc_status st;
    if ((st = hc_cu_check_disjoint(dev, op, "a product's y", a->y, a->ybytes, "another's w", b->w,
                                   b->wbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "a product's y", a->y, a->ybytes, "another's y", b->y,
                                   b->ybytes)) != HC_OK)
        return st;
    if (b->idx.buf)
        return hc_cu_check_disjoint(dev, op, "a product's y", a->y, a->ybytes, "another's idx",
                                    b->idx, b->ibytes);
    return HC_OK;
}

/* Every product as matmul / matvec_rows computes it (hc_cu_launch_dot_jobs:
 * the same kernel, whatever else shares its launch), one launch per weight
 * type present.  Everything is checked before anything is queued, so a
 * refused batch (one product of a type without a kernel, say) changes
 * nothing and the core runs its products one by one. */
hc_status hc_cu_matmul_batch(hc_stream *s, const hc_matmul_desc *desc, int n_desc, int64_t cols,
                             hc_ref x, int64_t n)
{
    static const char op[] = "matmul_batch";
    static const hc_type TYPES[] = {HC_TYPE_F32, HC_TYPE_F16, HC_TYPE_Q8_0, HC_TYPE_Q4_0};
    hc_device *dev;
    batch_item it[BATCH_MAX];
    hc_cu_dot_job jobs[BATCH_MAX];
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (n_desc < 0 || (n_desc > 0 && !desc))
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: %d products at %p", op, n_desc,
                          (const void *)desc);
    for (; n_desc > BATCH_MAX; desc += BATCH_MAX, n_desc -= BATCH_MAX)
        if ((st = hc_cu_matmul_batch(s, desc, BATCH_MAX, cols, x, n)) != HC_OK)
            return st;
    for (int i = 0; i < n_desc; i++) {
        const hc_matmul_desc *d = &desc[i];
        batch_item *b = &it[i];
        const char *name = d->idx.buf ? "matmul_batch (as matvec_rows)" : "matmul_batch (as matmul)";
        b->wtype = d->wtype;
        b->w = d->w;
        b->idx = d->idx;
        b->y = d->y;
        if ((st = dot_prepare(dev, name, d->wtype, d->w, d->rows, cols, x, n,
                              d->idx.buf ? &d->idx : NULL, d->n_idx, NULL, d->y, &b->job,
                              &b->wbytes, &b->ybytes, &b->ibytes)) != HC_OK)
            return st;
        for (int j = 0; j < i; j++)
            if ((st = batch_disjoint(dev, op, &it[i], &it[j])) != HC_OK ||
                (st = batch_disjoint(dev, op, &it[j], &it[i])) != HC_OK)
                return st;
    }
    for (size_t ti = 0; ti < sizeof TYPES / sizeof TYPES[0]; ti++) {
        int nj = 0;
        for (int i = 0; i < n_desc; i++)
            if (it[i].wtype == TYPES[ti] && it[i].job.n_out > 0)
                jobs[nj++] = it[i].job;
        if (nj == 0)
            continue;
        int e = hc_cu_launch_dot_jobs(s->s, TYPES[ti], jobs, nj, cols, hc_cu_addr(x), n);
        if ((st = hc_cu_check_queued(s, (cudaError_t)e, op)) != HC_OK)
            return st;
    }
    return HC_OK;
}

/* axpy_rows, and with `count` axpy_rows_counted (n_idx is then max_idx,
 * and the kernel reads the length). */
static hc_status axpy_common(hc_stream *s, const char *op, hc_type wtype, hc_ref wt, int64_t rows,
                             int64_t cols, hc_ref h, int64_t n, hc_ref idx, int64_t n_idx,
                             const hc_ref *count, hc_ref y)
{
    hc_device *dev;
    uint64_t row_bytes = 0, wbytes = 0, hbytes, ybytes, ibytes;
    char why[160];
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK ||
        (st = check_weights(dev, op, wtype, wt, rows, cols, &row_bytes, &wbytes)) != HC_OK)
        return st;
    if (n < 0 || n_idx < 0)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: negative n %lld or %s %lld", op, (ll)n,
                          count ? "max_idx" : "n_idx", (ll)n_idx);
    if ((st = hc_cu_check_ref_n(dev, op, "h", h, n, rows, 4, &hbytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "y", y, n, cols, 4, &ybytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "idx", idx, n_idx, 1, 4, &ibytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "y", y, ybytes, "h", h, hbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "y", y, ybytes, "wt", wt, wbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "y", y, ybytes, "idx", idx, ibytes)) != HC_OK ||
        (count && ((st = hc_cu_check_ref(dev, op, "count", *count, 4, 4)) != HC_OK ||
                   (st = hc_cu_check_disjoint(dev, op, "y", y, ybytes, "count", *count, 4)) !=
                       HC_OK)))
        return st;
    if ((st = hc_cu_weight_shape_ok(wtype, rows, cols, n, why, sizeof why)) != HC_OK)
        return hc_cu_fail(dev->ctx, st, "%s: %s", op, why);
    /* Nothing to add: y stays bit-identical (no kernel at all). */
    if (n == 0 || n_idx == 0 || cols == 0)
        return HC_OK;
    /* The sliced order's partials (a decode step's: 16 x n x cols floats at
     * most, 16 MiB); the stream's scratch, shared with attention's. */
    const int64_t n_slices = hc_cu_axpy_slices(n, cols, n_idx);
    void *part = NULL;
    if (n_slices > 1 &&
        (st = hc_cu_stream_scratch(s, (uint64_t)n_slices * (uint64_t)n * (uint64_t)cols * 4,
                                   &part)) != HC_OK)
        return st;
    int e = hc_cu_launch_axpy_rows(s->s, wtype, hc_cu_addr(wt), row_bytes, rows, cols,
                                   hc_cu_addr(h), n, hc_cu_addr(idx), n_idx,
                                   count ? hc_cu_addr(*count) : NULL, hc_cu_addr(y), part);
    return hc_cu_check_queued(s, (cudaError_t)e, op);
}

hc_status hc_cu_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                          hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    return axpy_common(s, "axpy_rows", wtype, wt, rows, cols, h, n, idx, n_idx, NULL, y);
}

hc_status hc_cu_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                  int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                  int64_t max_idx, hc_ref y)
{
    return axpy_common(s, "axpy_rows_counted", wtype, wt, rows, cols, h, n, idx, max_idx, &count,
                       y);
}
