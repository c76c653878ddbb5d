/*
 * Device-side selection (ABI 1.3): select_rows and the sparse products
 * whose list length is read from memory.  The CPU's "device memory" is
 * host memory and its stream is synchronous, so the count is simply read
 * when the call runs; what these entries buy on the CPU is one code path
 * for every device, not speed.
 */
#include "cpu_plugin.h"

typedef long long ll;

hc_status hc_cpu_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                             float cut, hc_ref map, hc_ref idx, hc_ref count)
{
    static const char op[] = "select_rows";
    hc_plugin_ctx *ctx;
    void *sp, *mp = NULL, *ip, *cp;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_rows < 0 || n_rows > INT32_MAX)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %lld tokens of %lld rows is no selection", op,
                           (ll)n_tok, (ll)n_rows);
    const uint64_t sbytes = (uint64_t)n_tok * (uint64_t)n_rows * 4, lbytes = (uint64_t)n_rows * 4;
    if ((st = hc_cpu_ref_n(ctx, op, "scores", scores, n_tok, n_rows, 4, &sp)) != HC_OK ||
        (map.buf && (st = hc_cpu_ref_n(ctx, op, "map", map, n_rows, 1, 4, &mp)) != HC_OK) ||
        (st = hc_cpu_ref_n(ctx, op, "idx", idx, n_rows, 1, 4, &ip)) != HC_OK ||
        (st = hc_cpu_ref(ctx, op, "count", count, 4, 4, &cp)) != HC_OK ||
        (st = hc_cpu_disjoint(ctx, op, "idx", ip, lbytes, "scores", sp, sbytes)) != HC_OK ||
        (st = hc_cpu_disjoint(ctx, op, "count", cp, 4, "scores", sp, sbytes)) != HC_OK ||
        (st = hc_cpu_disjoint(ctx, op, "count", cp, 4, "idx", ip, lbytes)) != HC_OK ||
        (mp && ((st = hc_cpu_disjoint(ctx, op, "idx", ip, lbytes, "map", mp, lbytes)) != HC_OK ||
                (st = hc_cpu_disjoint(ctx, op, "count", cp, 4, "map", mp, lbytes)) != HC_OK)))
        return st;
    const float *sc = sp;
    const int32_t *m = mp;
    int32_t *list = ip, k = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        int on = 0;
        for (int64_t t = 0; t < n_tok; t++)
            on |= sc[t * n_rows + r] >= cut;
        const int32_t v = m ? m[r] : (int32_t)r;
        if (on && v >= 0)
            list[k++] = v;
    }
    *(int32_t *)cp = k;
    return HC_OK;
}

/* The count at `count`, clamped to [0, max_idx], after the list's own
 * checks (it must hold max_idx entries). */
static hc_status read_count(hc_stream *s, const char *op, hc_ref idx, hc_ref count,
                            int64_t max_idx, int64_t *out)
{
    hc_plugin_ctx *ctx;
    void *ip, *cp;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (max_idx < 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: negative max_idx %lld", op, (ll)max_idx);
    if ((st = hc_cpu_ref_n(ctx, op, "idx", idx, max_idx, 1, 4, &ip)) != HC_OK ||
        (st = hc_cpu_ref(ctx, op, "count", count, 4, 4, &cp)) != HC_OK)
        return st;
    const int32_t k = *(const int32_t *)cp;
    *out = k < 0 ? 0 : k > max_idx ? max_idx : k;
    return HC_OK;
}

hc_status hc_cpu_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                     int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                     int64_t max_idx, hc_ref y)
{
    int64_t k = 0;
    hc_status st = read_count(s, "matvec_rows_counted", idx, count, max_idx, &k);
    return st != HC_OK ? st : hc_cpu_matvec_rows(s, wtype, w, rows, cols, x, n, idx, k, y);
}

hc_status hc_cpu_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                   int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                   int64_t max_idx, hc_ref y)
{
    int64_t k = 0;
    hc_status st = read_count(s, "axpy_rows_counted", idx, count, max_idx, &k);
    return st != HC_OK ? st : hc_cpu_axpy_rows(s, wtype, wt, rows, cols, h, n, idx, k, y);
}
