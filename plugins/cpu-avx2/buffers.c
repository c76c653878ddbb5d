/*
 * Buffers, streams and transfers.  A buffer is plain host memory (64-byte
 * aligned so every vector load of a row start is aligned) or host memory the
 * caller owns (wrap_host: mmap'ed weights are used in place, no copy).
 * Streams are synchronous: every op has finished when its call returns, so
 * sync has nothing to wait for.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu_plugin.h"

typedef unsigned long long ull;

#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

static hc_status device_ctx(hc_device *dev, const char *op, hc_plugin_ctx **ctx)
{
    (void)op;
    *ctx = NULL;
    if (!dev || dev->magic != HC_CPU_MAGIC_DEVICE || !dev->ctx)
        return HC_E_INVALID;
    *ctx = dev->ctx;
    return HC_OK;
}

hc_status hc_cpu_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    hc_plugin_ctx *ctx;
    hc_buffer *b = NULL;
    void *mem = NULL;
    hc_status st = device_ctx(dev, "buffer_alloc", &ctx);

    if (st != HC_OK)
        return st;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "buffer_alloc: out is NULL");
    *out = NULL;
    /* Round up to the alignment (and to at least one line for size 0). */
    if (size > (uint64_t)SIZE_MAX - 128)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "buffer_alloc: %llu bytes exceed the address space",
                           (ull)size);
    uint64_t total, avail;
    if (hc_cpu_meminfo(&total, &avail) && size > total)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "buffer_alloc: %llu bytes exceed the %llu of RAM",
                           (ull)size, (ull)total);
    size_t bytes = ((size_t)size + 63) & ~(size_t)63;
    if (bytes == 0)
        bytes = 64;
    b = calloc(1, sizeof *b);
    /* Big buffers (KV cache, converted weights) start on a 2 MiB boundary and
     * ask for transparent huge pages: decode streams through them every
     * token, and with 4 KiB pages that is a TLB miss per 4 KiB (core/util/hugemem.h
     * has the measurements).  Only the start moves; the size is unchanged. */
    const size_t align = bytes >= HUGE_MIN ? HUGE_PAGE : 64;
    if (!b || posix_memalign(&mem, align, bytes) != 0) {
        st = hc_cpu_fail(ctx, HC_E_NOMEM, "buffer_alloc: cannot allocate %llu bytes", (ull)size);
        goto out;
    }
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE)
        (void)madvise(mem, bytes, MADV_HUGEPAGE); /* a hint: fails harmlessly without THP */
#endif
    *b = (hc_buffer){HC_CPU_MAGIC_BUFFER, 1, ctx, mem, size};
    *out = b;
    b = NULL;
    mem = NULL;
    st = HC_OK;
out:
    free(mem);
    free(b);
    return st;
}

hc_status hc_cpu_buffer_wrap_host(hc_device *dev, void *ptr, uint64_t size, hc_buffer **out)
{
    hc_plugin_ctx *ctx;
    hc_buffer *b;
    hc_status st = device_ctx(dev, "buffer_wrap_host", &ctx);

    if (st != HC_OK)
        return st;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "buffer_wrap_host: out is NULL");
    *out = NULL;
    if (!ptr)
        return hc_cpu_fail(ctx, HC_E_INVALID, "buffer_wrap_host: ptr is NULL");
    if ((uintptr_t)ptr + size < (uintptr_t)ptr)
        return hc_cpu_fail(ctx, HC_E_INVALID,
                           "buffer_wrap_host: %llu bytes at %p wrap around the address space",
                           (ull)size, ptr);
    b = calloc(1, sizeof *b);
    if (!b)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "buffer_wrap_host: out of memory");
    *b = (hc_buffer){HC_CPU_MAGIC_BUFFER, 0, ctx, ptr, size};
    *out = b;
    return HC_OK;
}

void hc_cpu_buffer_free(hc_buffer *buf)
{
    if (!buf || buf->magic != HC_CPU_MAGIC_BUFFER)
        return;
    if (buf->owned)
        free(buf->ptr);
    buf->magic = 0;
    free(buf);
}

void *hc_cpu_buffer_host_ptr(hc_buffer *buf)
{
    if (!buf || buf->magic != HC_CPU_MAGIC_BUFFER)
        return NULL;
    return buf->ptr;
}

hc_status hc_cpu_stream_create(hc_device *dev, hc_stream **out)
{
    hc_plugin_ctx *ctx;
    hc_stream *s;
    hc_status st = device_ctx(dev, "stream_create", &ctx);

    if (st != HC_OK)
        return st;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "stream_create: out is NULL");
    s = calloc(1, sizeof *s);
    if (!s) {
        *out = NULL;
        return hc_cpu_fail(ctx, HC_E_NOMEM, "stream_create: out of memory");
    }
    *s = (hc_stream){HC_CPU_MAGIC_STREAM, ctx};
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
