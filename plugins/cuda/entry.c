/*
 * The plugin's face: the ops table, the exported entry point and the
 * context lifecycle.  init never fails for want of CUDA: without a driver
 * or a card the plugin loads and reports 0 devices, with the runtime's
 * reason (device.c).
 *
 * Provided: the lifecycle, devices, buffers, streams, transfers (copy
 * included), the weight ops and matmul_batch (F32, F16, Q8_0, Q4_0; Q6_K is
 * refused with HC_E_UNSUPPORTED, so the core runs it on the CPU) and the
 * layer ops (rmsnorm, rope, attention, unary, binary, glu), and the ABI 1.3
 * device-side selection (select_rows, matvec_rows_counted,
 * axpy_rows_counted).
 * buffer_wrap_host and buffer_host_ptr are NULL: device memory only.
 */
#include <stdlib.h>

#include "cuda_plugin.h"

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor);

/* Cheap and safe anywhere: whether CUDA is usable is init's question. */
static int cu_probe(void)
{
    return 10;
}

static hc_status cu_init(const hc_plugin_host *host, hc_plugin_ctx **out)
{
    hc_plugin_ctx *ctx;
    hc_status st;

    if (!out)
        return hc_cu_fail(NULL, HC_E_INVALID, "cuda: init: out is NULL");
    *out = NULL;
    if (host && host->size >= offsetof(hc_plugin_host, abi_minor) + sizeof(uint32_t) &&
        host->abi_major != HC_PLUGIN_ABI_MAJOR)
        return hc_cu_fail(NULL, HC_E_UNSUPPORTED, "cuda: the host speaks ABI %u, not %d",
                          host->abi_major, HC_PLUGIN_ABI_MAJOR);
    ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return hc_cu_fail(NULL, HC_E_NOMEM, "cuda: out of memory");
    hc_kit_host_copy(&ctx->host, host);
    pthread_mutex_init(&ctx->err_lock, NULL);
    st = hc_cu_devices_probe(ctx);
    if (st != HC_OK) {
        hc_cu_fail(NULL, st, "%s", ctx->err);
        pthread_mutex_destroy(&ctx->err_lock);
        free(ctx->devs);
        free(ctx);
        return st;
    }
    hc_cu_log(ctx, HC_LOG_INFO, "cuda: %d device%s", ctx->n_devs, ctx->n_devs == 1 ? "" : "s");
    *out = ctx;
    return HC_OK;
}

/* Devices and streams must be closed first (the core does).  The runtime
 * itself is left as it is: it tears down at process exit. */
static void cu_shutdown(hc_plugin_ctx *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_destroy(&ctx->err_lock);
    free(ctx->devs);
    free(ctx);
}

static const char *cu_last_error(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->err : hc_cu_init_error();
}

static int cu_device_count(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->n_devs : 0;
}

static const char *cu_no_device_reason(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->no_devices : "";
}

static const hc_plugin_ops cuda_ops = {
    .size = sizeof(hc_plugin_ops),
    .abi_major = HC_PLUGIN_ABI_MAJOR,
    .abi_minor = HC_PLUGIN_ABI_MINOR,
    .family = HC_GPU_FAMILY, /* "rocm" when built for HIP (gpu_runtime.h) */
    .variant = "",
    .version = "0.1.0",
    .probe = cu_probe,
    .init = cu_init,
    .shutdown = cu_shutdown,
    .last_error = cu_last_error,
    .device_count = cu_device_count,
    .device_info = hc_cu_device_info,
    .device_open = hc_cu_device_open,
    .device_close = hc_cu_device_close,
    .buffer_alloc = hc_cu_buffer_alloc,
    .buffer_free = hc_cu_buffer_free,
    .stream_create = hc_cu_stream_create,
    .stream_destroy = hc_cu_stream_destroy,
    .stream_sync = hc_cu_stream_sync,
    .upload = hc_cu_upload,
    .download = hc_cu_download,
    .copy = hc_cu_copy,
    .matmul = hc_cu_matmul,
    .matvec_rows = hc_cu_matvec_rows,
    .axpy_rows = hc_cu_axpy_rows,
    .rmsnorm = hc_cu_rmsnorm,
    .rope = hc_cu_rope,
    .attention = hc_cu_attention,
    .unary = hc_cu_unary,
    .binary = hc_cu_binary,
    .glu = hc_cu_glu,
    .op_cost = hc_cu_op_cost,
    .stream_flush = hc_cu_stream_flush,
    .matmul_batch = hc_cu_matmul_batch,
    .no_device_reason = cu_no_device_reason,
    .select_rows = hc_cu_select_rows,
    .matvec_rows_counted = hc_cu_matvec_rows_counted,
    .axpy_rows_counted = hc_cu_axpy_rows_counted,
    .scatter_rows = hc_cu_scatter_rows,
    .host_alloc = hc_cu_host_alloc,
    .host_free = hc_cu_host_free,
    .capture_begin = hc_cu_capture_begin,
    .capture_end = hc_cu_capture_end,
    .graph_launch = hc_cu_graph_launch,
    .graph_free = hc_cu_graph_free,
    .event_create = hc_cu_event_create,
    .event_destroy = hc_cu_event_destroy,
    .event_record = hc_cu_event_record,
    .event_sync = hc_cu_event_sync,
    .event_elapsed = hc_cu_event_elapsed,
};

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor; /* a newer core only appends entries: our table still fits */
    return abi_major == HC_PLUGIN_ABI_MAJOR ? &cuda_ops : NULL;
}
