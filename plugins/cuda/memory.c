/*
 * Buffers: plain device memory (cudaMalloc).  buffer_host_ptr and
 * buffer_wrap_host are not offered (NULL in the table).
 *
 * HOTCOLD_CUDA_MEMORY_LIMIT=<bytes> simulates a small GPU, as
 * HOTCOLD_VULKAN_MEMORY_LIMIT does for Vulkan: the buffers of one device
 * may hold at most that many bytes together; an allocation past it fails
 * with HC_E_NOMEM exactly as a real out-of-memory does, and device_info
 * reports mem_total capped by the limit and mem_free as at most the limit
 * minus what the buffers hold.  device_open reads the variable (it takes
 * effect for the next device opened; the last open sets it for every open
 * handle of that device), and device_info reads it again.  Unset or empty:
 * no limit; not a number: ignored, with a warning.  0 is a valid limit: no
 * buffer fits.
 */
#include <stdlib.h>

#include "cuda_plugin.h"

typedef unsigned long long ull;

uint64_t hc_cu_memory_limit(hc_plugin_ctx *ctx)
{
    static const char var[] = "HOTCOLD_" HC_GPU_ENV "_MEMORY_LIMIT";
    uint64_t limit;
    if (hc_kit_env_bytes(var, &limit) < 0)
        hc_cu_log(ctx, HC_LOG_WARN, "cuda: %s=%s is not a number of bytes (ignored)", var,
                  getenv(var));
    return limit;
}

/* Counts `bytes` against the device's limit; 0 if they do not fit. */
static int limit_reserve(hc_cu_devinfo *d, uint64_t bytes)
{
    uint64_t cur = atomic_load(&d->limited);
    do {
        if (d->mem_limit != UINT64_MAX && (bytes > d->mem_limit || cur > d->mem_limit - bytes))
            return 0;
    } while (!atomic_compare_exchange_weak(&d->limited, &cur, cur + bytes));
    return 1;
}

hc_status hc_cu_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    hc_buffer *b;
    hc_status st;
    cudaError_t e;

    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE || !out)
        return dev && dev->magic == HC_CU_MAGIC_DEVICE
                   ? hc_cu_fail(dev->ctx, HC_E_INVALID, "buffer_alloc: out is NULL")
                   : HC_E_INVALID;
    *out = NULL;
    /* A zero-byte buffer is valid (offset 0, nothing inside): one byte
     * behind it, so it still has an address. */
    uint64_t real = size ? size : 1;
    if (real > SIZE_MAX)
        return hc_cu_fail(dev->ctx, HC_E_NOMEM, "buffer_alloc: %llu bytes do not fit size_t",
                          (ull)size);
    if (!limit_reserve(dev->info, real))
        return hc_cu_fail(dev->ctx, HC_E_NOMEM,
                          "buffer_alloc: cannot allocate %llu bytes of device memory "
                          "(HOTCOLD_" HC_GPU_ENV "_MEMORY_LIMIT=%llu, %llu in use)",
                          (ull)size, (ull)dev->info->mem_limit,
                          (ull)atomic_load(&dev->info->limited));
    b = calloc(1, sizeof *b);
    if (!b) {
        atomic_fetch_sub(&dev->info->limited, real);
        return hc_cu_fail(dev->ctx, HC_E_NOMEM, "buffer_alloc: out of host memory");
    }
    if ((st = hc_cu_set_device(dev->ctx, dev->index)) != HC_OK)
        goto fail;
    if ((e = cudaMalloc(&b->ptr, (size_t)real)) != cudaSuccess) {
        /* Out of memory is not sticky: clear it so later calls do not see it. */
        (void)cudaGetLastError();
        char what[96];
        snprintf(what, sizeof what, "buffer_alloc: cudaMalloc of %llu bytes", (ull)size);
        st = hc_cu_fail_cuda(dev->ctx, e, what);
        goto fail;
    }
    b->magic = HC_CU_MAGIC_BUFFER;
    b->dev = dev;
    b->size = size;
    *out = b;
    return HC_OK;
fail:
    atomic_fetch_sub(&dev->info->limited, real);
    free(b);
    return st;
}

/* The core frees a buffer only after stream_sync: nothing uses it now. */
void hc_cu_buffer_free(hc_buffer *buf)
{
    if (!buf || buf->magic != HC_CU_MAGIC_BUFFER)
        return;
    if (hc_cu_set_device(buf->dev->ctx, buf->dev->index) == HC_OK)
        (void)cudaFree(buf->ptr);
    atomic_fetch_sub(&buf->dev->info->limited, buf->size ? buf->size : 1);
    buf->magic = 0;
    free(buf);
}
