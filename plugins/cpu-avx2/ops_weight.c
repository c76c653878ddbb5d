/*
 * The weight products: matmul, matvec_rows and axpy_rows.  This file checks
 * every argument, quantizes x where the weight type wants it, and hands the
 * work to the thread pool; the arithmetic is in kernels_*.c.
 */
#include "cpu_kernels.h"
#include "cpu_plugin.h"

typedef long long ll;

/* Below this many multiply-adds a job costs less than waking the pool. */
#define PARALLEL_MIN_MACS (1 << 15)

/* Type, shape and the weight range; *row_bytes is one row's size. */
static hc_status check_weights(hc_plugin_ctx *ctx, const char *op, hc_type t, hc_ref w,
                               int64_t rows, int64_t cols, uint64_t *row_bytes, void **wp)
{
    uint64_t bytes;
    hc_status st = hc_kit_check_weights(hc_cpu_kit_fail, ctx, op, t, rows, cols, row_bytes, &bytes);
    return st != HC_OK ? st : hc_cpu_ref(ctx, op, "w", w, bytes, hc_kit_weight_align(t), wp);
}

static int threads_for(hc_plugin_ctx *ctx, uint64_t macs)
{
    return macs < PARALLEL_MIN_MACS ? 1 : hc_cpu_pool_size(ctx->pool);
}

/* Parts of a matmul: PARTS_PER_THREAD per thread, so that threads that
 * run at different speeds still finish together, but no fewer than
 * MIN_PART_ROWS rows each on average (a part's first rows start without
 * prefetch), and never fewer than 2 per thread: the task tapers the sizes
 * (hc_cpu_split_tapered), and one tapered part per thread would give the
 * first thread 3/4 of the rows on two threads. */
#define PARTS_PER_THREAD 8
#define MIN_PART_ROWS 64
static int mm_parts(hc_plugin_ctx *ctx, int64_t rows, uint64_t macs)
{
    const int nth = threads_for(ctx, macs);
    if (nth == 1)
        return 1;
    int64_t parts = rows / MIN_PART_ROWS;
    if (parts > (int64_t)nth * PARTS_PER_THREAD)
        parts = (int64_t)nth * PARTS_PER_THREAD;
    return parts > 2 * (int64_t)nth ? (int)parts : 2 * nth;
}

/* Quantizes the n tokens of x into scratch when the type works on 8-bit x. */
static hc_status quantize_x(hc_plugin_ctx *ctx, const char *op, hc_type t, const float *x,
                            int64_t cols, int64_t n, const uint8_t **xq, size_t *stride)
{
    void *mem;
    size_t per = hc_cpu_xq_bytes(t, cols);

    *xq = NULL;
    *stride = per;
    if (per == 0)
        return HC_OK;
    if ((uint64_t)n > SIZE_MAX / per)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "%s: quantized x of %lld tokens is too large", op,
                           (ll)n);
    hc_status st = hc_cpu_scratch(ctx, op, per * (size_t)n, &mem);
    if (st != HC_OK)
        return st;
    hc_cpu_quant_args qa = {t, x, cols, n, mem, per};
    hc_cpu_pool_run(ctx->pool, hc_cpu_quant_task, &qa,
                    threads_for(ctx, (uint64_t)n * (uint64_t)cols / 4));
    *xq = mem;
    return HC_OK;
}

/* Checks one product (matmul when idx is NULL, else matvec_rows) and fills
 * *a, all but the quantized x; *count: the rows it computes. */
static hc_status mm_prepare(hc_plugin_ctx *ctx, const char *op, hc_type wtype, hc_ref w,
                            int64_t rows, int64_t cols, hc_ref x, int64_t n, const hc_ref *idx,
                            int64_t n_idx, hc_ref y, hc_cpu_mm_args *a, int64_t *count)
{
    uint64_t row_bytes = 0;
    void *wp, *xp, *yp, *ip = NULL;
    hc_status st = check_weights(ctx, op, wtype, w, rows, cols, &row_bytes, &wp);

    if (st != HC_OK)
        return st;
    if (n < 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: negative token count %lld", op, (ll)n);
    if ((st = hc_cpu_ref_n(ctx, op, "x", x, n, cols, 4, &xp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "y", y, n, rows, 4, &yp)) != HC_OK)
        return st;
    uint64_t ybytes = (uint64_t)n * (uint64_t)rows * 4;
    if ((st = hc_cpu_disjoint(ctx, op, "y", yp, ybytes, "x", xp, (uint64_t)n * cols * 4)) ||
        (st = hc_cpu_disjoint(ctx, op, "y", yp, ybytes, "w", wp, (uint64_t)rows * row_bytes)))
        return st;
    if (idx) {
        if (n_idx < 0)
            return hc_cpu_fail(ctx, HC_E_INVALID, "%s: negative n_idx %lld", op, (ll)n_idx);
        if ((st = hc_cpu_ref_n(ctx, op, "idx", *idx, n_idx, 1, 4, &ip)) != HC_OK ||
            (st = hc_cpu_disjoint(ctx, op, "y", yp, ybytes, "idx", ip, (uint64_t)n_idx * 4)) ||
            (st = hc_cpu_check_rows(ctx, op, ip, n_idx, rows)) != HC_OK)
            return st;
    }
    *a = (hc_cpu_mm_args){wtype, wp, row_bytes, rows, cols, xp, NULL, 0, n,
                          ip, idx ? n_idx : 0, yp};
    *count = idx ? n_idx : rows;
    return HC_OK;
}

/* Runs a prepared product of `count` rows: x quantized for its type, then
 * the rows split over the pool. */
static hc_status mm_run(hc_plugin_ctx *ctx, const char *op, hc_cpu_mm_args *a, int64_t count)
{
    if (a->n == 0 || count == 0)
        return HC_OK;
    pthread_mutex_lock(&ctx->lock);
    hc_status st = quantize_x(ctx, op, a->type, a->x, a->cols, a->n, &a->xq, &a->xq_stride);
    if (st == HC_OK)
        hc_cpu_pool_run_parts(
            ctx->pool, ctx->mm_task, a,
            mm_parts(ctx, count, (uint64_t)count * (uint64_t)a->cols * (uint64_t)a->n));
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* matmul (idx NULL) and matvec_rows share everything but the row list. */
static hc_status mm_common(hc_stream *s, const char *op, hc_type wtype, hc_ref w, int64_t rows,
                           int64_t cols, hc_ref x, int64_t n, const hc_ref *idx, int64_t n_idx,
                           hc_ref y)
{
    hc_plugin_ctx *ctx;
    hc_cpu_mm_args a;
    int64_t count = 0;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st == HC_OK)
        st = mm_prepare(ctx, op, wtype, w, rows, cols, x, n, idx, n_idx, y, &a, &count);
    return st == HC_OK ? mm_run(ctx, op, &a, count) : st;
}

/* Bytes of a prepared product's y. */
static uint64_t y_bytes(const hc_cpu_mm_args *a)
{
    return (uint64_t)a->n * (uint64_t)a->rows * 4;
}

/* No product may write where another one reads or writes. */
static hc_status batch_disjoint(hc_plugin_ctx *ctx, const char *op, const hc_cpu_mm_args *a,
                                const hc_cpu_mm_args *b)
{
    hc_status st;
    if ((st = hc_cpu_disjoint(ctx, op, "y", a->y, y_bytes(a), "another y", b->y, y_bytes(b))) ||
        (st = hc_cpu_disjoint(ctx, op, "y", a->y, y_bytes(a), "another w", b->w,
                              (uint64_t)b->rows * b->row_bytes)) ||
        (st = hc_cpu_disjoint(ctx, op, "y", a->y, y_bytes(a), "another idx", b->idx,
                              (uint64_t)b->n_idx * 4)))
        return st;
    return HC_OK;
}

hc_status hc_cpu_matmul_batch(hc_stream *s, const hc_matmul_desc *desc, int n_desc, int64_t cols,
                              hc_ref x, int64_t n)
{
    static const char op[] = "matmul_batch";
    hc_plugin_ctx *ctx;
    hc_cpu_mm_batch_args b;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (n_desc < 0 || (n_desc > 0 && !desc))
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %d products at %p", op, n_desc,
                           (const void *)desc);
    /* More than one job holds: in turns. */
    for (; n_desc > HC_CPU_MM_BATCH_MAX; desc += HC_CPU_MM_BATCH_MAX, n_desc -= HC_CPU_MM_BATCH_MAX)
        if ((st = hc_cpu_matmul_batch(s, desc, HC_CPU_MM_BATCH_MAX, cols, x, n)) != HC_OK)
            return st;
    b.n = n_desc;
    b.start[0] = 0;
    int xq_users = 0, mixed = 0;
    hc_type xq_type = HC_TYPE_F32;
    for (int i = 0; i < n_desc; i++) {
        const hc_matmul_desc *d = &desc[i];
        int64_t count = 0;
        st = mm_prepare(ctx, op, d->wtype, d->w, d->rows, cols, x, n, d->idx.buf ? &d->idx : NULL,
                        d->n_idx, d->y, &b.op[i], &count);
        if (st != HC_OK)
            return st;
        b.start[i + 1] = b.start[i] + count;
        for (int j = 0; j < i; j++)
            if ((st = batch_disjoint(ctx, op, &b.op[i], &b.op[j])) != HC_OK ||
                (st = batch_disjoint(ctx, op, &b.op[j], &b.op[i])) != HC_OK)
                return st;
        if (count > 0 && hc_cpu_xq_bytes(d->wtype, cols) > 0) {
            mixed |= xq_users++ > 0 && d->wtype != xq_type;
            xq_type = d->wtype;
        }
    }
    const int64_t total = b.start[n_desc];
    if (n == 0 || total == 0)
        return HC_OK;
    /* Products that want x quantized in different ways: one at a time
     * (already checked above). */
    if (mixed) {
        for (int i = 0; i < n_desc && st == HC_OK; i++)
            st = mm_run(ctx, op, &b.op[i], b.start[i + 1] - b.start[i]);
        return st;
    }

    pthread_mutex_lock(&ctx->lock);
    const uint8_t *xq = NULL;
    size_t xq_stride = 0;
    if (xq_users > 0)
        st = quantize_x(ctx, op, xq_type, b.op[0].x, cols, n, &xq, &xq_stride);
    if (st == HC_OK) {
        for (int i = 0; i < n_desc; i++) {
            b.op[i].xq = xq;
            b.op[i].xq_stride = xq_stride;
        }
        hc_cpu_pool_run_parts(ctx->pool, ctx->mm_batch_task, &b,
                              mm_parts(ctx, total, (uint64_t)total * (uint64_t)cols * (uint64_t)n));
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

hc_status hc_cpu_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                        hc_ref x, int64_t n, hc_ref y)
{
    return mm_common(s, "matmul", wtype, w, rows, cols, x, n, NULL, 0, y);
}

hc_status hc_cpu_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                             hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    return mm_common(s, "matvec_rows", wtype, w, rows, cols, x, n, &idx, n_idx, y);
}

hc_status hc_cpu_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                           hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    static const char op[] = "axpy_rows";
    hc_plugin_ctx *ctx;
    uint64_t row_bytes = 0;
    void *wp, *hp, *yp, *ip;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    /* Q6_K is an output-head type: the core never sums its rows (it refuses
     * a Q6_K ffn_down_t at load). */
    if (wtype == HC_TYPE_Q6_K)
        return hc_cpu_fail(ctx, HC_E_UNSUPPORTED, "%s: weight type Q6_K has no axpy kernel", op);
    st = check_weights(ctx, op, wtype, wt, rows, cols, &row_bytes, &wp);
    if (st != HC_OK)
        return st;
    if (n < 0 || n_idx < 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: negative n %lld or n_idx %lld", op, (ll)n,
                           (ll)n_idx);
    if ((st = hc_cpu_ref_n(ctx, op, "h", h, n, rows, 4, &hp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "y", y, n, cols, 4, &yp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "idx", idx, n_idx, 1, 4, &ip)) != HC_OK)
        return st;
    uint64_t ybytes = (uint64_t)n * (uint64_t)cols * 4;
    if ((st = hc_cpu_disjoint(ctx, op, "y", yp, ybytes, "h", hp, (uint64_t)n * rows * 4)) ||
        (st = hc_cpu_disjoint(ctx, op, "y", yp, ybytes, "wt", wp, (uint64_t)rows * row_bytes)) ||
        (st = hc_cpu_disjoint(ctx, op, "y", yp, ybytes, "idx", ip, (uint64_t)n_idx * 4)) ||
        (st = hc_cpu_check_rows(ctx, op, ip, n_idx, rows)) != HC_OK)
        return st;
    if (n == 0 || n_idx == 0 || cols == 0)
        return HC_OK;

    pthread_mutex_lock(&ctx->lock);
    hc_cpu_axpy_args a = {wtype, wp, row_bytes, rows, cols, hp, n, ip, n_idx, yp,
                          ctx->avx512, NULL, 0, 0};
    int nth = threads_for(ctx, (uint64_t)n_idx * (uint64_t)cols * (uint64_t)n);
    a.n_slices = hc_cpu_axpy_slices(wtype, n, n_idx, &a.slice_rows);
    if (a.n_slices > 0) {
        /* Row slices into partials (scratch), then the partials into y. */
        void *mem;
        st = hc_cpu_scratch(ctx, op, (size_t)a.n_slices * (size_t)cols * sizeof(float), &mem);
        if (st == HC_OK) {
            a.partial = mem;
            /* One part per slice, claimed by whichever thread is free. */
            hc_cpu_pool_run_parts(ctx->pool, hc_cpu_axpy_task, &a,
                                  nth > 1 ? (int)a.n_slices : 1);
            hc_cpu_pool_run(ctx->pool, hc_cpu_axpy_reduce_task, &a,
                            threads_for(ctx, (uint64_t)a.n_slices * (uint64_t)cols));
        }
    } else {
        /* Threads own 32-column blocks: more threads than blocks would idle. */
        if ((int64_t)nth > (cols + 31) / 32)
            nth = (int)((cols + 31) / 32);
        hc_cpu_pool_run(ctx->pool, hc_cpu_axpy_task, &a, nth);
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}
