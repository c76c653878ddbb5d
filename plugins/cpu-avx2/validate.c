/*
 * Argument checking shared by every op, and the per-context error message.
 * Every failure names the op, the argument and the offending range, so the
 * core's log says exactly which call was wrong.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin.h"

typedef unsigned long long ull;

hc_status hc_cpu_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
        if (ctx->host.log)
            ctx->host.log(ctx->host.log_user, HC_LOG_DEBUG, ctx->err);
    }
    return st;
}

void hc_cpu_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    if (!ctx || !ctx->host.log)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx->host.log(ctx->host.log_user, level, msg);
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

int hc_cpu_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t ab;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, out))
        return 0;
    return 1;
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
    /* Written as two comparisons so off + bytes never wraps. */
    if (r.off > b->size || bytes > b->size - r.off)
        return hc_cpu_fail(ctx, HC_E_INVALID,
                           "%s: %s: range [%llu, %llu + %llu) exceeds the buffer of %llu bytes", op,
                           name, (ull)r.off, (ull)r.off, (ull)bytes, (ull)b->size);
    if (align > 1 && ((uintptr_t)b->ptr + r.off) % align != 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s: offset %llu is not %llu-byte aligned", op,
                           name, (ull)r.off, (ull)align);
    *ptr = b->ptr + r.off;
    return HC_OK;
}

hc_status hc_cpu_ref_n(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                       int64_t count1, int64_t count2, uint64_t elem, void **ptr)
{
    uint64_t bytes;

    *ptr = NULL;
    if (count1 < 0 || count2 < 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s: negative size (%lld x %lld)", op, name,
                           (long long)count1, (long long)count2);
    if (!hc_cpu_mul3((uint64_t)count1, (uint64_t)count2, elem, &bytes))
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s: size %lld x %lld x %llu overflows", op,
                           name, (long long)count1, (long long)count2, (ull)elem);
    return hc_cpu_ref(ctx, op, name, r, bytes, elem, ptr);
}

static int overlaps(const void *pa, uint64_t na, const void *pb, uint64_t nb)
{
    uintptr_t a = (uintptr_t)pa, b = (uintptr_t)pb;
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

hc_status hc_cpu_disjoint(hc_plugin_ctx *ctx, const char *op, const char *a_name, const void *pa,
                          uint64_t na, const char *b_name, const void *pb, uint64_t nb)
{
    if (overlaps(pa, na, pb, nb))
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s overlaps %s", op, a_name, b_name);
    return HC_OK;
}

hc_status hc_cpu_same_or_disjoint(hc_plugin_ctx *ctx, const char *op, const char *a_name,
                                  const void *pa, uint64_t na, const char *b_name, const void *pb,
                                  uint64_t nb)
{
    if (pa == pb && na == nb)
        return HC_OK;
    if (overlaps(pa, na, pb, nb))
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: %s partially overlaps %s", op, a_name, b_name);
    return HC_OK;
}

hc_status hc_cpu_check_rows(hc_plugin_ctx *ctx, const char *op, const int32_t *idx, int64_t n_idx,
                            int64_t rows)
{
    for (int64_t i = 0; i < n_idx; i++) {
        if (idx[i] < 0 || idx[i] >= rows)
            return hc_cpu_fail(ctx, HC_E_INVALID, "%s: idx[%lld] = %d is outside [0, %lld)", op,
                               (long long)i, (int)idx[i], (long long)rows);
    }
    return HC_OK;
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
