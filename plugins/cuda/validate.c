/*
 * Error messages and the argument checks every op shares: the checks are
 * include/hotcold/plugin_kit.h's; what is the plugin's own here is its
 * handles (one of our buffers, of this device?), where a message goes (the
 * context under its lock, or the init error before a context exists) and
 * the runtime's error codes (cudaGetErrorString's text).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_plugin.h"

/* last_error(NULL): why init failed (before any context exists). */
static char g_init_err[HC_CU_ERR_LEN];

const char *hc_cu_init_error(void)
{
    return g_init_err;
}

hc_status hc_cu_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...)
{
    char msg[HC_CU_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!ctx) {
        snprintf(g_init_err, sizeof g_init_err, "%s", msg);
        return st;
    }
    /* Devices may be driven from several threads: one writer at a time. */
    pthread_mutex_lock(&ctx->err_lock);
    memcpy(ctx->err, msg, sizeof msg);
    pthread_mutex_unlock(&ctx->err_lock);
    hc_kit_host_log(&ctx->host, HC_LOG_DEBUG, msg);
    return st;
}

hc_status hc_cu_fail_cuda(hc_plugin_ctx *ctx, cudaError_t e, const char *what)
{
    hc_status st = e == cudaErrorMemoryAllocation ? HC_E_NOMEM : HC_E_DEVICE;
    return hc_cu_fail(ctx, st, "%s: %s (%s, %d)", what, cudaGetErrorString(e), cudaGetErrorName(e),
                      (int)e);
}

void hc_cu_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...)
{
    char msg[HC_CU_ERR_LEN + 64];
    va_list ap;

    if (!ctx || !hc_kit_host_has_log(&ctx->host))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hc_kit_host_log(&ctx->host, level, msg);
}

hc_status hc_cu_kit_fail(void *ctx, hc_status st, const char *msg)
{
    return hc_cu_fail(ctx, st, "%s", msg);
}

hc_status hc_cu_stream_dev(hc_stream *s, const char *op, hc_device **dev)
{
    *dev = NULL;
    if (!s || s->magic != HC_CU_MAGIC_STREAM || !s->dev)
        return HC_E_INVALID; /* no context to record a message on */
    *dev = s->dev;
    if (s->failed)
        return hc_cu_fail(s->dev->ctx, HC_E_DEVICE,
                          "cuda: %s: the stream failed earlier (see the first error); destroy it",
                          op);
    return hc_cu_set_device(s->dev->ctx, s->dev->index);
}

hc_status hc_cu_check_queued(hc_stream *s, cudaError_t e, const char *what)
{
    /* A launch error (bad configuration) is returned by the call, or by
     * cudaGetLastError right after a kernel launch; a sticky error (the
     * context is lost) stays on every later call too. */
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e == cudaSuccess)
        return HC_OK;
    s->failed = 1;
    return hc_cu_fail_cuda(s->dev->ctx, e, what);
}

hc_status hc_cu_check_ref(hc_device *dev, const char *op, const char *name, hc_ref r,
                          uint64_t bytes, uint64_t align)
{
    const hc_buffer *b = r.buf;
    hc_plugin_ctx *ctx = dev->ctx;

    if (!b)
        return hc_cu_fail(ctx, HC_E_INVALID, "%s: %s: buffer is NULL", op, name);
    if (b->magic != HC_CU_MAGIC_BUFFER)
        return hc_cu_fail(ctx, HC_E_INVALID, "%s: %s: not a buffer of the cuda plugin", op, name);
    if (b->dev != dev)
        return hc_cu_fail(ctx, HC_E_INVALID, "%s: %s: the buffer belongs to another device", op,
                          name);
    /* cudaMalloc's addresses are 256-byte aligned: an aligned offset is an
     * aligned address. */
    return hc_kit_check_range(hc_cu_kit_fail, ctx, op, name, r.off, bytes, b->size, align, 0);
}

hc_status hc_cu_check_ref_n(hc_device *dev, const char *op, const char *name, hc_ref r,
                            int64_t count1, int64_t count2, uint64_t elem, uint64_t *bytes)
{
    hc_status st =
        hc_kit_check_count(hc_cu_kit_fail, dev->ctx, op, name, count1, count2, elem, bytes);
    return st != HC_OK ? st : hc_cu_check_ref(dev, op, name, r, *bytes, elem);
}

hc_status hc_cu_check_disjoint(hc_device *dev, const char *op, const char *a_name, hc_ref a,
                               uint64_t na, const char *b_name, hc_ref b, uint64_t nb)
{
    /* Both ranges were checked to lie inside their buffers: no wrap-around. */
    if (a.buf != b.buf)
        return HC_OK;
    return hc_kit_check_disjoint(hc_cu_kit_fail, dev->ctx, op, a_name, a.off, na, b_name, b.off,
                                 nb);
}
