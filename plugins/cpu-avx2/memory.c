/*
 * Buffers.  A buffer is plain host memory (64-byte aligned so every vector
 * load of a row start is aligned) or host memory the caller owns
 * (wrap_host: mmap'ed weights are used in place, no copy).  And the host
 * memory of ABI 1.3's host_alloc.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu_plugin.h"

typedef unsigned long long ull;

#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

hc_status hc_cpu_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    hc_plugin_ctx *ctx;
    hc_buffer *b = NULL;
    void *mem = NULL;
    hc_status st = hc_cpu_device_ctx(dev, "buffer_alloc", &ctx);

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
    hc_status st = hc_cpu_device_ctx(dev, "buffer_wrap_host", &ctx);

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

/* ABI 1.3 host_alloc/host_free.  This device's memory is host memory and
 * upload/download are memmoves, so there is nothing to pin: this is
 * ordinary 64-byte-aligned memory.  The entries exist so that the core has
 * one path for every device (a GPU's are page-locked). */
hc_status hc_cpu_host_alloc(hc_device *dev, uint64_t size, void **out)
{
    hc_plugin_ctx *ctx;
    void *mem = NULL;
    hc_status st = hc_cpu_device_ctx(dev, "host_alloc", &ctx);

    if (st != HC_OK)
        return st;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "host_alloc: out is NULL");
    *out = NULL;
    if (size > (uint64_t)SIZE_MAX - 128)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "host_alloc: %llu bytes exceed the address space",
                           (ull)size);
    size_t bytes = ((size_t)size + 63) & ~(size_t)63;
    if (posix_memalign(&mem, 64, bytes ? bytes : 64) != 0)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "host_alloc: cannot allocate %llu bytes", (ull)size);
    *out = mem;
    return HC_OK;
}

void hc_cpu_host_free(hc_device *dev, void *ptr)
{
    (void)dev; /* memory of any cpu device: plain free */
    free(ptr);
}
