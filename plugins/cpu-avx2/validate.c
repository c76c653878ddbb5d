/*
 * The per-context error message and the argument checks every op shares:
 * the checks themselves are include/hotcold/plugin_kit.h's; what is the
 * plugin's own here is its handles (is this buffer one of ours?) and where
 * a message goes (ctx->err, logged at DEBUG).  Every failure names the op,
 * the argument and the offending range, so the core's log says exactly
 * which call was wrong.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin.h"

hc_status hc_cpu_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
        hc_kit_host_log(&ctx->host, HC_LOG_DEBUG, ctx->err);
    }
    return st;
}

void hc_cpu_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...)
{
    char msg[HC_KIT_MSG_LEN];
    va_list ap;

    if (!ctx || !hc_kit_host_has_log(&ctx->host))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hc_kit_host_log(&ctx->host, level, msg);
}

hc_status hc_cpu_kit_fail(void *ctx, hc_status st, const char *msg)
{
    return hc_cpu_fail(ctx, st, "%s", msg);
}

hc_status hc_cpu_stream_ctx(hc_stream *s, const char *op, hc_plugin_ctx **ctx)
{
    (void)op; /* no context to record a message on */
    *ctx = NULL;
    if (!s || s->magic != HC_CPU_MAGIC_STREAM || !s->ctx)
        return HC_E_INVALID;
    *ctx = s->ctx;
    return HC_OK;
}

hc_status hc_cpu_device_ctx(hc_device *dev, const char *op, hc_plugin_ctx **ctx)
{
    (void)op;
    *ctx = NULL;
    if (!dev || dev->magic != HC_CPU_MAGIC_DEVICE || !dev->ctx)
        return HC_E_INVALID;
    *ctx = dev->ctx;
    return HC_OK;
}

hc_status hc_cpu_ref(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r, uint64_t bytes,
                     uint64_t align, void **ptr)
{
    const hc_buffer *b = r.buf;

    *ptr = NULL;
    if (!b)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s: buffer is NULL", op, name);
    if (b->magic != HC_CPU_MAGIC_BUFFER)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s: not a buffer of the cpu plugin", op, name);
    /* The kernels load from host addresses: the address must be aligned. */
    hc_status st = hc_kit_check_range(hc_cpu_kit_fail, ctx, op, name, r.off, bytes, b->size, align,
                                      (uint64_t)(uintptr_t)b->ptr);
    if (st == HC_OK)
        *ptr = b->ptr + r.off;
    return st;
}

hc_status hc_cpu_ref_n(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                       int64_t count1, int64_t count2, uint64_t elem, void **ptr)
{
    uint64_t bytes;

    *ptr = NULL;
    hc_status st = hc_kit_check_count(hc_cpu_kit_fail, ctx, op, name, count1, count2, elem, &bytes);
    return st != HC_OK ? st : hc_cpu_ref(ctx, op, name, r, bytes, elem, ptr);
}

hc_status hc_cpu_disjoint(hc_plugin_ctx *ctx, const char *op, const char *a_name, const void *pa,
                          uint64_t na, const char *b_name, const void *pb, uint64_t nb)
{
    return hc_kit_check_disjoint(hc_cpu_kit_fail, ctx, op, a_name, (uint64_t)(uintptr_t)pa, na,
                                 b_name, (uint64_t)(uintptr_t)pb, nb);
}

hc_status hc_cpu_same_or_disjoint(hc_plugin_ctx *ctx, const char *op, const char *a_name,
                                  const void *pa, uint64_t na, const char *b_name, const void *pb,
                                  uint64_t nb)
{
    return hc_kit_check_same_or_disjoint(hc_cpu_kit_fail, ctx, op, a_name,
                                         (uint64_t)(uintptr_t)pa, na, b_name,
                                         (uint64_t)(uintptr_t)pb, nb);
}

hc_status hc_cpu_check_rows(hc_plugin_ctx *ctx, const char *op, const int32_t *idx, int64_t n_idx,
                            int64_t rows)
{
    return hc_kit_check_rows(hc_cpu_kit_fail, ctx, op, idx, n_idx, rows);
}

hc_status hc_cpu_scratch(hc_plugin_ctx *ctx, const char *op, size_t bytes, void **out)
{
    void *p = NULL;

    *out = NULL;
    if (bytes <= ctx->scratch_size) {
        *out = ctx->scratch;
        return HC_OK;
    }
    /* Grow by half again so a slowly growing KV length does not realloc
     * every token; round to the alignment. */
    size_t want = bytes + bytes / 2;
    if (want < bytes || want > SIZE_MAX - 64)
        want = bytes;
    want = (want + 63) & ~(size_t)63;
    if (want < bytes || posix_memalign(&p, 64, want) != 0)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "%s: cannot allocate %zu bytes of work memory", op,
                           bytes);
    free(ctx->scratch);
    ctx->scratch = p;
    ctx->scratch_size = want;
    *out = p;
    return HC_OK;
}
