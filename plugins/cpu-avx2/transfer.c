/*
 * upload, download and copy: memory moves between host memory and buffers
 * (which are host memory too), done before the call returns.
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
