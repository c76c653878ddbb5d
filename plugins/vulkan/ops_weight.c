/*
 * The weight ops: matmul, matvec_rows, axpy_rows.  This file checks the
 * arguments, splits the work where a device limit requires it, and records
 * the dispatches; the arithmetic is in shaders/dot_rows.comp and
 * shaders/axpy_rows.comp.
 *
 * Splits (all limits read from the device):
 *  - weights: one descriptor range may cover at most maxStorageBufferRange
 *    bytes (128 MiB on lavapipe), so a matrix is bound as up to
 *    HC_VK_WINDOWS windows of whole rows; a matrix needing more windows
 *    runs as several dispatches over row ranges (matmul, matvec_rows: each
 *    output row is written by one of them).  axpy_rows sums over the list
 *    in list order, which splitting by rows would reorder: it refuses
 *    (HC_E_UNSUPPORTED) a matrix larger than HC_VK_WINDOWS windows.
 *  - tokens: when n tokens of x or y exceed one binding, the tokens run in
 *    chunks (every token's result is computed the same way either way).
 *
 * Row indices come from device memory and cannot be checked on the host
 * without a read-back: the kernels skip entries outside [0, rows).
 */
#include <stdio.h>

#include "vk_plugin.h"

typedef long long ll;
typedef unsigned long long ull;

/* axpy_rows: lists of at least 2 x AXPY_SLICE_MIN entries run in up to
 * AXPY_SLICES slices of at least AXPY_SLICE_MIN entries (axpy_rows.comp). */
#define AXPY_SLICES 16
#define AXPY_SLICE_MIN 16

/* Rows of `row_bytes` in one weight window (at least 1 if a row fits). */
static uint64_t rows_per_window(const hc_device *dev, uint64_t row_bytes, int64_t rows)
{
    uint64_t rpw = row_bytes ? hc_vk_usable_window(dev) / row_bytes : (uint64_t)rows;
    if (rpw > (uint64_t)rows)
        rpw = (uint64_t)rows;
    return rpw ? rpw : 1;
}

/* Bytes of one token of the op's input (x or h) and output (y). */
static void token_bytes(int op, int64_t rows, int64_t cols, uint64_t *in, uint64_t *out)
{
    int axpy = op == HC_VK_OP_AXPY_ROWS;
    *in = (uint64_t)(axpy ? rows : cols) * 4;
    *out = (uint64_t)(axpy ? cols : rows) * 4;
}

hc_status hc_vk_weight_shape_ok(hc_device *dev, int op, hc_type wtype, int64_t rows,
                                int64_t cols, int64_t n, char *why, size_t why_len)
{
    uint64_t rb = hc_type_row_size(wtype, cols), in, out, win = hc_vk_usable_window(dev);

    (void)n; /* tokens are chunked: any count works */
    why[0] = 0;
    if (!hc_kit_type_known(wtype) || hc_vk_kernel_find(dev, op, wtype) < 0) {
        snprintf(why, why_len, "weight type %d has no kernel", (int)wtype);
        return HC_E_UNSUPPORTED;
    }
    if (rows > INT32_MAX || cols > INT32_MAX) {
        snprintf(why, why_len, "shape %lld x %lld exceeds 32-bit indexing", (ll)rows, (ll)cols);
        return HC_E_UNSUPPORTED;
    }
    token_bytes(op, rows, cols, &in, &out);
    if (rb > win || in > win || out > win) {
        snprintf(why, why_len, "a row of %lld x %lld exceeds one binding (%llu bytes)", (ll)rows,
                 (ll)cols, (ull)dev->window);
        return HC_E_UNSUPPORTED;
    }
    if (op == HC_VK_OP_AXPY_ROWS && rows > 0 &&
        (uint64_t)rows > rows_per_window(dev, rb, rows) * HC_VK_WINDOWS) {
        snprintf(why, why_len, "%lld rows of %llu bytes exceed %d bindings of %llu bytes",
                 (ll)rows, (ull)rb, HC_VK_WINDOWS, (ull)dev->window);
        return HC_E_UNSUPPORTED;
    }
    return HC_OK;
}

/* Type, shape and the weight range; *row_bytes is one row's size. */
static hc_status check_weights(hc_device *dev, const char *op, hc_type t, hc_ref w, int64_t rows,
                               int64_t cols, uint64_t *row_bytes, uint64_t *bytes)
{
    hc_status st =
        hc_kit_check_weights(hc_vk_kit_fail, dev->ctx, op, t, rows, cols, row_bytes, bytes);
    return st != HC_OK ? st : hc_vk_check_ref(dev, op, "w", w, *bytes, hc_kit_weight_align(t));
}

/* One validated call. */
typedef struct weight_call {
    const char *op;
    int kop;            /* hc_vk_op */
    hc_type t;
    hc_ref w, a, idx, y;
    int64_t rows, cols, n, n_idx; /* n_idx: max_idx for a counted call */
    uint64_t row_bytes;
    const hc_ref *count;          /* the counted ops: where the list length is */
} weight_call;

/* Windows over rows [row_lo, *row_hi) of W, *row_hi as far as they reach. */
static hc_status bind_windows(hc_device *dev, const weight_call *c, int64_t row_lo, uint64_t rpw,
                              hc_vk_dispatch *d, hc_vk_weight_params *p, int64_t *row_hi)
{
    hc_status st;
    *row_hi = row_lo;
    for (int k = 0; k < HC_VK_WINDOWS; k++) {
        int64_t start = row_lo + (int64_t)rpw * k;
        if (start >= c->rows) {
            /* Every descriptor of the array must be valid: repeat the first. */
            d->w[k] = d->w[0];
            p->w_off[k] = p->w_off[0];
            continue;
        }
        int64_t nr = c->rows - start < (int64_t)rpw ? c->rows - start : (int64_t)rpw;
        hc_ref at = {c->w.buf, c->w.off + (uint64_t)start * c->row_bytes};
        if ((st = hc_vk_range_of(dev, c->op, "w", at, (uint64_t)nr * c->row_bytes, 1, &d->w[k],
                                 &p->w_off[k])) != HC_OK)
            return st;
        *row_hi = start + nr;
    }
    return HC_OK;
}

static hc_status run(hc_stream *s, const weight_call *c)
{
    hc_device *dev = s->dev;
    hc_vk_dispatch d = {0};
    hc_vk_weight_params p = {0};
    hc_vk_range idx_range = {0};
    uint32_t idx_off = 0;
    char why[160];
    hc_status st;

    if ((st = hc_vk_weight_shape_ok(dev, c->kop, c->t, c->rows, c->cols, c->n, why,
                                    sizeof why)) != HC_OK)
        return hc_vk_fail(dev->ctx, st, "%s: %s", c->op, why);
    d.kernel = hc_vk_kernel_find(dev, c->kop, c->t);
    if (c->kop != HC_VK_OP_MATMUL &&
        (st = hc_vk_range_of(dev, c->op, "idx", c->idx, (uint64_t)c->n_idx * 4, 4, &idx_range,
                             &idx_off)) != HC_OK)
        return st;
    uint64_t rpw = rows_per_window(dev, c->row_bytes, c->rows);
    uint64_t in_tok, out_tok;
    token_bytes(c->kop, c->rows, c->cols, &in_tok, &out_tok);
    uint64_t tpc = (uint64_t)c->n, win = hc_vk_usable_window(dev);
    if (in_tok && win / in_tok < tpc)
        tpc = win / in_tok;
    if (out_tok && win / out_tok < tpc)
        tpc = win / out_tok;
    /* axpy_rows: a long list in slices (see axpy_rows.comp), whose partials
     * of every token of a chunk share one binding. */
    uint32_t n_slices = 1, slice_items = (uint32_t)c->n_idx;
    const uint64_t slice_fit = win / out_tok; /* out_tok <= win: checked above */
    if (c->kop == HC_VK_OP_AXPY_ROWS && c->count && c->n_idx >= 2 * AXPY_SLICE_MIN) {
        /* The shader slices by the count it reads, by the rule below (for
         * the same length the same slices): record for the most slices any
         * length can take. */
        n_slices = slice_fit < AXPY_SLICES ? (uint32_t)slice_fit : AXPY_SLICES;
        if (n_slices < 2)
            n_slices = 1;
        else if (win / (out_tok * n_slices) < tpc)
            tpc = win / (out_tok * n_slices);
    } else if (c->kop == HC_VK_OP_AXPY_ROWS && c->n_idx >= 2 * AXPY_SLICE_MIN) {
        uint64_t want = (uint64_t)c->n_idx / AXPY_SLICE_MIN;
        n_slices = want < AXPY_SLICES ? (uint32_t)want : AXPY_SLICES;
        slice_items = (uint32_t)(((uint64_t)c->n_idx + n_slices - 1) / n_slices);
        n_slices = (uint32_t)(((uint64_t)c->n_idx + slice_items - 1) / slice_items);
        /* One token's partials must fit a binding; where they do not (a
         * row of y over window / n_slices bytes), one pass, with the chunk
         * size the limits above gave. */
        if (win / (out_tok * n_slices) == 0)
            n_slices = 1;
        else if (win / (out_tok * n_slices) < tpc)
            tpc = win / (out_tok * n_slices);
    }
    if (c->count &&
        (st = hc_vk_range_of(dev, c->op, "count", *c->count, 4, 4, &d.e, &p.e_off)) != HC_OK)
        return st;
    p.counted = c->count != NULL;
    p.slice_fit = slice_fit < UINT32_MAX ? (uint32_t)slice_fit : UINT32_MAX;
    hc_buffer *partials = NULL;
    if (n_slices > 1 &&
        (st = hc_vk_stream_scratch(s, c->op, (uint64_t)n_slices * tpc * out_tok, &partials)) !=
            HC_OK)
        return st;

    for (int64_t t0 = 0; t0 < c->n; t0 += (int64_t)tpc) {
        int64_t tn = c->n - t0 < (int64_t)tpc ? c->n - t0 : (int64_t)tpc;
        hc_ref a = {c->a.buf, c->a.off + (uint64_t)t0 * in_tok};
        hc_ref y = {c->y.buf, c->y.off + (uint64_t)t0 * out_tok};
        if ((st = hc_vk_range_of(dev, c->op, "x", a, (uint64_t)tn * in_tok, 4, &d.a, &p.a_off)) !=
                HC_OK ||
            (st = hc_vk_range_of(dev, c->op, "y", y, (uint64_t)tn * out_tok, 4, &d.c,
                                 &p.c_off)) != HC_OK)
            return st;
        d.tile = hc_vk_tile_for(tn);
        d.b = c->kop == HC_VK_OP_MATMUL ? d.a : idx_range; /* matmul has no list */
        p.b_off = idx_off;
        d.d = d.a; /* unused, but for axpy_rows' slices below */
        if (n_slices > 1 &&
            (st = hc_vk_range_of(dev, c->op, "partials", (hc_ref){partials, 0},
                                 (uint64_t)n_slices * (uint64_t)tn * out_tok, 4, &d.d,
                                 &p.d_off)) != HC_OK)
            return st;
        int64_t row_hi;
        for (int64_t row_lo = 0; row_lo < c->rows; row_lo = row_hi) {
            if ((st = bind_windows(dev, c, row_lo, rpw, &d, &p, &row_hi)) != HC_OK)
                return st;
            uint64_t groups;
            switch (c->kop) {
            case HC_VK_OP_MATMUL: groups = (uint64_t)(row_hi - row_lo); break;
            case HC_VK_OP_MATVEC_ROWS: groups = (uint64_t)c->n_idx; break;
            default: groups = ((uint64_t)c->cols + dev->wg_axpy - 1) / dev->wg_axpy; break;
            }
            p.rows = (uint32_t)c->rows;
            p.cols = (uint32_t)c->cols;
            p.n = (uint32_t)tn;
            p.n_items = c->kop == HC_VK_OP_MATMUL ? (uint32_t)groups : (uint32_t)c->n_idx;
            p.row_bytes = (uint32_t)c->row_bytes;
            p.row_lo = (uint32_t)row_lo;
            p.row_hi = (uint32_t)row_hi;
            p.rows_per_win = (uint32_t)rpw;
            if ((st = hc_vk_grid(dev, c->op, groups, &d.groups_x, &d.groups_y)) != HC_OK)
                return st;
            p.groups_x = d.groups_x;
            d.push = &p;
            d.push_bytes = sizeof p;
            if (n_slices > 1) {
                /* Phase 1 over blocks x slices, then phase 2 over blocks
                 * (the stream orders the two dispatches). */
                p.phase = 1;
                p.n_slices = n_slices;
                p.slice_items = slice_items;
                if ((st = hc_vk_grid(dev, c->op, groups * n_slices, &d.groups_x,
                                     &d.groups_y)) != HC_OK)
                    return st;
                p.groups_x = d.groups_x;
                if ((st = hc_vk_record_dispatch(s, c->op, &d)) != HC_OK)
                    return st;
                p.phase = 2;
                if ((st = hc_vk_grid(dev, c->op, groups, &d.groups_x, &d.groups_y)) != HC_OK)
                    return st;
                p.groups_x = d.groups_x;
            }
            if ((st = hc_vk_record_dispatch(s, c->op, &d)) != HC_OK)
                return st;
        }
    }
    return HC_OK;
}

/* matmul (no list) and matvec_rows share everything but the row list. */
static hc_status dot_common(hc_stream *s, const char *op, int kop, hc_type wtype, hc_ref w,
                            int64_t rows, int64_t cols, hc_ref x, int64_t n, const hc_ref *idx,
                            int64_t n_idx, const hc_ref *count, hc_ref y)
{
    hc_device *dev;
    uint64_t row_bytes = 0, wbytes = 0, xbytes, ybytes, ibytes = 0;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK ||
        (st = check_weights(dev, op, wtype, w, rows, cols, &row_bytes, &wbytes)) != HC_OK)
        return st;
    if (n < 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: negative token count %lld", op, (ll)n);
    if ((st = hc_vk_check_ref_n(dev, op, "x", x, n, cols, 4, &xbytes)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "y", y, n, rows, 4, &ybytes)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "x", x, xbytes)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "w", w, wbytes)) != HC_OK)
        return st;
    if (idx) {
        if (n_idx < 0)
            return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: negative n_idx %lld", op, (ll)n_idx);
        if ((st = hc_vk_check_ref_n(dev, op, "idx", *idx, n_idx, 1, 4, &ibytes)) != HC_OK ||
            (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "idx", *idx, ibytes)) != HC_OK)
            return st;
    }
    if (count && ((st = hc_vk_check_ref(dev, op, "count", *count, 4, 4)) != HC_OK ||
                  (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "count", *count, 4)) != HC_OK))
        return st;
    if (n == 0 || rows == 0 || (idx && n_idx == 0))
        return HC_OK;
    weight_call c = {op,   kop,  wtype, w,    x,     idx ? *idx : x, y,
                     rows, cols, n,     n_idx, row_bytes, count};
    return run(s, &c);
}

hc_status hc_vk_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                       hc_ref x, int64_t n, hc_ref y)
{
    return dot_common(s, "matmul", HC_VK_OP_MATMUL, wtype, w, rows, cols, x, n, NULL, 0, NULL,
                      y);
}

hc_status hc_vk_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                            hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    return dot_common(s, "matvec_rows", HC_VK_OP_MATVEC_ROWS, wtype, w, rows, cols, x, n, &idx,
                      n_idx, NULL, y);
}

hc_status hc_vk_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                    int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                    int64_t max_idx, hc_ref y)
{
    return dot_common(s, "matvec_rows_counted", HC_VK_OP_MATVEC_ROWS, wtype, w, rows, cols, x, n,
                      &idx, max_idx, &count, y);
}

/* axpy_rows, and with `count` its counted form (n_idx is then max_idx). */
static hc_status axpy_common(hc_stream *s, const char *op, hc_type wtype, hc_ref wt, int64_t rows,
                             int64_t cols, hc_ref h, int64_t n, hc_ref idx, int64_t n_idx,
                             const hc_ref *count, hc_ref y)
{
    hc_device *dev;
    uint64_t row_bytes = 0, wbytes = 0, hbytes, ybytes, ibytes;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK ||
        (st = check_weights(dev, op, wtype, wt, rows, cols, &row_bytes, &wbytes)) != HC_OK)
        return st;
    if (n < 0 || n_idx < 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: negative n %lld or n_idx %lld", op, (ll)n,
                          (ll)n_idx);
    if ((st = hc_vk_check_ref_n(dev, op, "h", h, n, rows, 4, &hbytes)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "y", y, n, cols, 4, &ybytes)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "idx", idx, n_idx, 1, 4, &ibytes)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "h", h, hbytes)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "wt", wt, wbytes)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "idx", idx, ibytes)) != HC_OK ||
        (count && ((st = hc_vk_check_ref(dev, op, "count", *count, 4, 4)) != HC_OK ||
                   (st = hc_vk_check_disjoint(dev, op, "y", y, ybytes, "count", *count, 4)) !=
                       HC_OK)))
        return st;
    /* Nothing to add: y stays bit-identical (no dispatch at all). */
    if (n == 0 || n_idx == 0 || cols == 0)
        return HC_OK;
    weight_call c = {op, HC_VK_OP_AXPY_ROWS, wtype, wt, h, idx, y, rows, cols, n, n_idx,
                     row_bytes, count};
    return run(s, &c);
}

hc_status hc_vk_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                          hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    return axpy_common(s, "axpy_rows", wtype, wt, rows, cols, h, n, idx, n_idx, NULL, y);
}

hc_status hc_vk_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                  int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                  int64_t max_idx, hc_ref y)
{
    return axpy_common(s, "axpy_rows_counted", wtype, wt, rows, cols, h, n, idx, max_idx, &count,
                       y);
}
