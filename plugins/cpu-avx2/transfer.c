/*
 * upload, download, copy and scatter_rows: memory moves between host
 * memory and buffers (which are host memory too), done before the call
 * returns.
 */
#include <string.h>

#include "cpu_plugin.h"

/* memmove, not memcpy: a wrapped buffer may alias the host pointer. */
hc_status hc_cpu_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    hc_plugin_ctx *ctx;
    void *d;
    hc_status st = hc_cpu_stream_ctx(s, "upload", &ctx);

    if (st == HC_OK)
        st = hc_cpu_ref(ctx, "upload", "dst", dst, bytes, 1, &d);
    if (st != HC_OK)
        return st;
    if (!src && bytes > 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "upload: src is NULL");
    if (bytes > 0)
        memmove(d, src, (size_t)bytes);
    return HC_OK;
}

hc_status hc_cpu_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    hc_plugin_ctx *ctx;
    void *p;
    hc_status st = hc_cpu_stream_ctx(s, "download", &ctx);

    if (st == HC_OK)
        st = hc_cpu_ref(ctx, "download", "src", src, bytes, 1, &p);
    if (st != HC_OK)
        return st;
    if (!dst && bytes > 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "download: dst is NULL");
    if (bytes > 0)
        memmove(dst, p, (size_t)bytes);
    return HC_OK;
}

hc_status hc_cpu_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes)
{
    hc_plugin_ctx *ctx;
    void *d, *p;
    hc_status st = hc_cpu_stream_ctx(s, "copy", &ctx);

    if (st == HC_OK)
        st = hc_cpu_ref(ctx, "copy", "dst", dst, bytes, 1, &d);
    if (st == HC_OK)
        st = hc_cpu_ref(ctx, "copy", "src", src, bytes, 1, &p);
    if (st != HC_OK)
        return st;
    if (bytes > 0)
        memmove(d, p, (size_t)bytes);
    return HC_OK;
}

/* ABI 1.3: dst row pos[t] = src row t.  The stream is synchronous, so the
 * positions are read as the call runs, like any device's would be as its
 * op runs.  Rows go in token order: were a position listed twice (plugin.h
 * does not say), the later token's row is what stays. */
hc_status hc_cpu_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                              hc_ref pos, int64_t dst_rows)
{
    static const char op[] = "scatter_rows";
    hc_plugin_ctx *ctx;
    void *sp, *dp, *pp;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (row_bytes % 4 != 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: row_bytes %llu is not a multiple of 4", op,
                           (unsigned long long)row_bytes);
    if (n < 0 || dst_rows < 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: negative n %lld or dst_rows %lld", op,
                           (long long)n, (long long)dst_rows);
    const int64_t words = (int64_t)(row_bytes / 4); /* < 2^62 */
    if ((st = hc_cpu_ref_n(ctx, op, "src", src, n, words, 4, &sp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "dst", dst, dst_rows, words, 4, &dp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "pos", pos, n, 1, 4, &pp)) != HC_OK)
        return st;
    /* The sizes were checked against their buffers: no overflow below. */
    const uint64_t sbytes = (uint64_t)n * row_bytes, dbytes = (uint64_t)dst_rows * row_bytes;
    if ((st = hc_cpu_disjoint(ctx, op, "dst", dp, dbytes, "src", sp, sbytes)) != HC_OK ||
        (st = hc_cpu_disjoint(ctx, op, "dst", dp, dbytes, "pos", pp, (uint64_t)n * 4)) != HC_OK)
        return st;
    const int32_t *at = pp;
    for (int64_t t = 0; t < n; t++)
        if (at[t] >= 0 && at[t] < dst_rows)
            memcpy((uint8_t *)dp + (uint64_t)at[t] * row_bytes,
                   (const uint8_t *)sp + (uint64_t)t * row_bytes, (size_t)row_bytes);
    return HC_OK;
}
