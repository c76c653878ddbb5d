/*
 * The one device: the machine itself.  Its name and memory come from
 * /proc (sysinfo.c); its thread count is the context's.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin.h"

int hc_cpu_device_count(hc_plugin_ctx *ctx)
{
    return ctx ? 1 : 0;
}

hc_status hc_cpu_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out)
{
    hc_device_info info;

    if (!ctx)
        return HC_E_INVALID;
    if (index != 0)
        return hc_cpu_fail(ctx, HC_E_NODEV, "device_info: no device %d (the cpu plugin has 1)",
                           index);
    if (!out || out->size < sizeof out->size)
        return hc_cpu_fail(ctx, HC_E_INVALID, "device_info: out is NULL or its size is not set");
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "%s", ctx->cpu_name);
    info.kind = HC_DEVICE_CPU;
    info.caps = HC_CAP_HOST_MAPPED | HC_CAP_WRAP_HOST;
    hc_cpu_meminfo(&info.mem_total, &info.mem_free);
    info.max_buffer = info.mem_total ? info.mem_total : (uint64_t)SIZE_MAX;
    info.n_threads = atomic_load(&ctx->n_threads);
    /* A caller built against an older, shorter struct gets its prefix. */
    hc_kit_device_info_copy(out, &info);
    return HC_OK;
}

hc_status hc_cpu_device_open(hc_plugin_ctx *ctx, int index, hc_device **out)
{
    hc_device *dev;

    if (!ctx)
        return HC_E_INVALID;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "device_open: out is NULL");
    *out = NULL;
    if (index != 0)
        return hc_cpu_fail(ctx, HC_E_NODEV, "device_open: no device %d (the cpu plugin has 1)",
                           index);
    dev = calloc(1, sizeof *dev);
    if (!dev)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "device_open: out of memory");
    *dev = (hc_device){HC_CPU_MAGIC_DEVICE, ctx};
    *out = dev;
    return HC_OK;
}

void hc_cpu_device_close(hc_device *dev)
{
    if (!dev || dev->magic != HC_CPU_MAGIC_DEVICE)
        return;
    dev->magic = 0;
    free(dev);
}
