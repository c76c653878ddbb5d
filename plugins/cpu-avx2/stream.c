/*
 * Streams.  They are synchronous: every op has finished when its call
 * returns, so sync has nothing to wait for (and the plugin has no
 * stream_flush).
 */
#include <stdlib.h>

#include "cpu_plugin.h"

hc_status hc_cpu_stream_create(hc_device *dev, hc_stream **out)
{
    hc_plugin_ctx *ctx;
    hc_stream *s;
    hc_status st = hc_cpu_device_ctx(dev, "stream_create", &ctx);

    if (st != HC_OK)
        return st;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "stream_create: out is NULL");
    s = calloc(1, sizeof *s);
    if (!s) {
        *out = NULL;
        return hc_cpu_fail(ctx, HC_E_NOMEM, "stream_create: out of memory");
    }
    *s = (hc_stream){HC_CPU_MAGIC_STREAM, ctx, dev};
    *out = s;
    return HC_OK;
}

void hc_cpu_stream_destroy(hc_stream *s)
{
    if (!s || s->magic != HC_CPU_MAGIC_STREAM)
        return;
    s->magic = 0;
    free(s);
}

hc_status hc_cpu_stream_sync(hc_stream *s)
{
    hc_plugin_ctx *ctx;
    return hc_cpu_stream_ctx(s, "stream_sync", &ctx);
}
