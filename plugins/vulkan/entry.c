/*
 * The plugin's face: the ops table, the exported entry point and the
 * context lifecycle.  init never fails for want of Vulkan: without the
 * loader, a driver or a device the plugin loads and reports 0 devices.
 *
 * Every op of ABI 1.1 is provided (the layer ops in ops_layer.c, so a whole
 * transformer layer stays on the device; stream_flush in stream.c) except
 * buffer_wrap_host and set_threads (NULL: zero-copy host weights are not
 * imported, and there are no CPU threads to set); of 1.2 and 1.3,
 * no_device_reason (why init found no device, from instance.c), the
 * device-side selection ops and scatter_rows, but not yet matmul_batch,
 * host_alloc or capture (see the table).  A new kernel is a line
 * in shaders/variants.txt, its .comp, an hc_vk_op id and an ops_*.c entry
 * that fills an hc_vk_dispatch.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor);

/* Cheap and safe anywhere: whether Vulkan is usable is init's question,
 * and "no" there means 0 devices, not a rejected plugin. */
static int vk_probe(void)
{
    return 10;
}

static hc_status vk_init(const hc_plugin_host *host, hc_plugin_ctx **out)
{
    hc_plugin_ctx *ctx;
    hc_status st;

    if (!out)
        return hc_vk_fail(NULL, HC_E_INVALID, "vulkan: init: out is NULL");
    *out = NULL;
    if (host && host->size >= offsetof(hc_plugin_host, abi_minor) + sizeof(uint32_t) &&
        host->abi_major != HC_PLUGIN_ABI_MAJOR)
        return hc_vk_fail(NULL, HC_E_UNSUPPORTED, "vulkan: the host speaks ABI %u, not %d",
                          host->abi_major, HC_PLUGIN_ABI_MAJOR);
    ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return hc_vk_fail(NULL, HC_E_NOMEM, "vulkan: out of memory");
    /* Copy only what the host has: an older host's struct is shorter. */
    hc_kit_host_copy(&ctx->host, host);
    pthread_mutex_init(&ctx->err_lock, NULL);
    st = hc_vk_instance_create(ctx);
    if (st != HC_OK) {
        hc_vk_instance_destroy(ctx);
        pthread_mutex_destroy(&ctx->err_lock);
        free(ctx);
        return st;
    }
    hc_vk_log(ctx, HC_LOG_INFO, "vulkan: %d device%s", ctx->n_devs, ctx->n_devs == 1 ? "" : "s");
    *out = ctx;
    return HC_OK;
}

/* Devices and streams must be closed first (the core does). */
static void vk_shutdown(hc_plugin_ctx *ctx)
{
    if (!ctx)
        return;
    hc_vk_instance_destroy(ctx);
    pthread_mutex_destroy(&ctx->err_lock);
    free(ctx);
}

static const char *vk_last_error(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->err : hc_vk_init_error();
}

static int vk_device_count(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->n_devs : 0;
}

static const char *vk_no_device_reason(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->no_devices : "";
}

static const hc_plugin_ops vulkan_ops = {
    .size = sizeof(hc_plugin_ops),
    .abi_major = HC_PLUGIN_ABI_MAJOR,
    .abi_minor = HC_PLUGIN_ABI_MINOR,
    .family = "vulkan",
    .variant = "",
    .version = "0.2.0",
    .probe = vk_probe,
    .init = vk_init,
    .shutdown = vk_shutdown,
    .last_error = vk_last_error,
    .device_count = vk_device_count,
    .device_info = hc_vk_device_info,
    .device_open = hc_vk_device_open,
    .device_close = hc_vk_device_close,
    .buffer_alloc = hc_vk_buffer_alloc,
    .buffer_free = hc_vk_buffer_free,
    .buffer_host_ptr = hc_vk_buffer_host_ptr,
    .stream_create = hc_vk_stream_create,
    .stream_destroy = hc_vk_stream_destroy,
    .stream_sync = hc_vk_cap_stream_sync,
    .upload = hc_vk_cap_upload,
    .download = hc_vk_cap_download,
    .copy = hc_vk_cap_copy,
    .matmul = hc_vk_cap_matmul,
    .matvec_rows = hc_vk_cap_matvec_rows,
    .axpy_rows = hc_vk_cap_axpy_rows,
    .rmsnorm = hc_vk_cap_rmsnorm,
    .rope = hc_vk_cap_rope,
    .attention = hc_vk_cap_attention,
    .unary = hc_vk_cap_unary,
    .binary = hc_vk_cap_binary,
    .glu = hc_vk_cap_glu,
    .op_cost = hc_vk_op_cost,
    .stream_flush = hc_vk_cap_stream_flush,
    .no_device_reason = vk_no_device_reason,
    .select_rows = hc_vk_cap_select_rows,
    .matvec_rows_counted = hc_vk_cap_matvec_rows_counted,
    .axpy_rows_counted = hc_vk_cap_axpy_rows_counted,
    .scatter_rows = hc_vk_cap_scatter_rows,
    /* Every stream entry above goes through capture.c, which records
     * while its stream captures. */
    /* host_alloc: ordinary memory (memory.c); the transfers stage through
     * the frame's own host-visible buffers whatever memory they are given,
     * so it is there because capture names host_alloc memory. */
    .host_alloc = hc_vk_host_alloc,
    .host_free = hc_vk_host_free,
    .capture_begin = hc_vk_capture_begin,
    .capture_end = hc_vk_capture_end,
    .graph_launch = hc_vk_graph_launch,
    .graph_free = hc_vk_graph_free,
    .event_create = hc_vk_event_create,
    .event_destroy = hc_vk_event_destroy,
    .event_record = hc_vk_event_record,
    .event_sync = hc_vk_event_sync,
    .event_elapsed = hc_vk_event_elapsed,
};

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor; /* a newer core only appends entries: our table still fits */
    return abi_major == HC_PLUGIN_ABI_MAJOR ? &vulkan_ops : NULL;
}
