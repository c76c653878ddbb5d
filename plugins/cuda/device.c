/*
 * Devices: what the runtime offers (count, properties) read once at init,
 * info on request, open and close.
 *
 * No driver, or no card, is not an error: cudaGetDeviceCount then fails
 * (cudaErrorInsufficientDriver, 35, without a driver; cudaErrorNoDevice,
 * 100, without a card) and leaves the count unwritten, so it starts at 0;
 * its text is the no_device_reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_plugin.h"

typedef unsigned long long ull;

/* Peak bytes/s from the memory clock (kHz) and bus width (bits), double
 * data rate; 0 when the runtime does not tell. */
static double peak_bandwidth(int index)
{
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, index) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, index) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0.0;
    }
    return 2.0 * (double)clock_khz * 1e3 * (double)bus_bits / 8.0;
}

hc_status hc_cu_devices_probe(hc_plugin_ctx *ctx)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess || n <= 0) {
        if (e != cudaSuccess)
            snprintf(ctx->no_devices, sizeof ctx->no_devices,
                     HC_GPU_RT "GetDeviceCount failed: %s (%s, %d)", cudaGetErrorString(e),
                     cudaGetErrorName(e), (int)e);
        else
            snprintf(ctx->no_devices, sizeof ctx->no_devices,
                     HC_GPU_RT "GetDeviceCount found no device");
        (void)cudaGetLastError(); /* not sticky: clear it for later calls */
        hc_cu_log(ctx, HC_LOG_INFO, HC_GPU_FAMILY ": no devices: %s", ctx->no_devices);
        ctx->n_devs = 0;
        return HC_OK;
    }
    ctx->devs = calloc((size_t)n, sizeof *ctx->devs);
    if (!ctx->devs)
        return hc_cu_fail(ctx, HC_E_NOMEM, "cuda: out of memory");
    for (int i = 0; i < n; i++) {
        struct cudaDeviceProp p;
        hc_cu_devinfo *d = &ctx->devs[i];
        memset(&p, 0, sizeof p);
        if ((e = cudaGetDeviceProperties(&p, i)) != cudaSuccess)
            return hc_cu_fail_cuda(ctx, e, "cuda: cudaGetDeviceProperties");
        /* The runtime's name field is 256 bytes; ours (the ABI's) 128. */
        size_t len = strnlen(p.name, sizeof p.name);
        if (len >= sizeof d->name)
            len = sizeof d->name - 1;
        memcpy(d->name, p.name, len);
        d->name[len] = 0;
        d->major = p.major;
        d->minor = p.minor;
        d->integrated = p.integrated;
        d->mem_total = (uint64_t)p.totalGlobalMem;
        d->bandwidth = peak_bandwidth(i);
        d->mem_limit = UINT64_MAX;
        atomic_init(&d->limited, 0);
        hc_cu_log(ctx, HC_LOG_INFO, "cuda: device %d: %s, sm_%d%d, %llu MiB", i, d->name, d->major,
                  d->minor, (ull)(d->mem_total >> 20));
    }
    ctx->n_devs = n;
    return HC_OK;
}

hc_status hc_cu_set_device(hc_plugin_ctx *ctx, int index)
{
    cudaError_t e = cudaSetDevice(index);
    return e == cudaSuccess ? HC_OK : hc_cu_fail_cuda(ctx, e, "cuda: cudaSetDevice");
}

hc_status hc_cu_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out)
{
    hc_device_info info;
    size_t free_b = 0, total_b = 0;
    hc_status st;
    cudaError_t e;

    if (!ctx || !out)
        return ctx ? hc_cu_fail(ctx, HC_E_INVALID, "device_info: out is NULL") : HC_E_INVALID;
    if (out->size < sizeof(size_t))
        return hc_cu_fail(ctx, HC_E_INVALID, "device_info: out->size %zu is too small", out->size);
    if (index < 0 || index >= ctx->n_devs)
        return hc_cu_fail(ctx, HC_E_NODEV, "device_info: no device %d (%d devices)", index,
                          ctx->n_devs);
    hc_cu_devinfo *d = &ctx->devs[index];
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    snprintf(info.name, sizeof info.name, "%s", d->name);
    info.kind = d->integrated ? HC_DEVICE_IGPU : HC_DEVICE_GPU;
    info.caps = HC_CAP_F16 | HC_CAP_SUBGROUP | HC_CAP_ASYNC;
    if ((st = hc_cu_set_device(ctx, index)) != HC_OK)
        return st;
    if ((e = cudaMemGetInfo(&free_b, &total_b)) != cudaSuccess)
        return hc_cu_fail_cuda(ctx, e, "device_info: cudaMemGetInfo");
    info.mem_total = d->mem_total;
    info.mem_free = (uint64_t)free_b;
    /* HOTCOLD_CUDA_MEMORY_LIMIT: a card of that size, with our buffers in it. */
    uint64_t limit = hc_cu_memory_limit(ctx), used = atomic_load(&d->limited);
    if (limit != UINT64_MAX) {
        if (info.mem_total > limit)
            info.mem_total = limit;
        uint64_t left = limit > used ? limit - used : 0;
        if (info.mem_free > left)
            info.mem_free = left;
    }
    info.max_buffer = info.mem_total;
    hc_kit_device_info_copy(out, &info);
    return HC_OK;
}

hc_status hc_cu_device_open(hc_plugin_ctx *ctx, int index, hc_device **out)
{
    hc_status st;
    cudaError_t e;

    if (!ctx || !out)
        return ctx ? hc_cu_fail(ctx, HC_E_INVALID, "device_open: out is NULL") : HC_E_INVALID;
    *out = NULL;
    if (index < 0 || index >= ctx->n_devs)
        return hc_cu_fail(ctx, HC_E_NODEV, "device_open: no device %d (%d devices)", index,
                          ctx->n_devs);
    if ((st = hc_cu_set_device(ctx, index)) != HC_OK)
        return st;
    /* Create the primary context now, so that a card the driver cannot use
     * fails here and not at the first buffer. */
    if ((e = cudaFree(NULL)) != cudaSuccess)
        return hc_cu_fail_cuda(ctx, e, "device_open: creating the CUDA context");
    hc_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return hc_cu_fail(ctx, HC_E_NOMEM, "device_open: out of host memory");
    dev->magic = HC_CU_MAGIC_DEVICE;
    dev->ctx = ctx;
    dev->index = index;
    dev->info = &ctx->devs[index];
    dev->info->mem_limit = hc_cu_memory_limit(ctx);
    *out = dev;
    return HC_OK;
}

void hc_cu_device_close(hc_device *dev)
{
    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE)
        return;
    dev->magic = 0;
    free(dev);
}
