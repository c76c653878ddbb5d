/*
 * The plugin's face: the ops table, the exported entry point and the
 * context lifecycle (the one "cpu" device is device.c's).  Built WITHOUT
 * ISA flags: the loader calls hc_plugin_entry and probe on CPUs that may
 * lack AVX2, and init refuses to start there, so no kernel can ever run on
 * such a CPU.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_plugin.h"

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor);

static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static int default_threads(const hc_plugin_host *host)
{
    int n = host->n_threads > 0 ? host->n_threads : hc_cpu_online_count();
    return n > HC_CPU_MAX_THREADS ? HC_CPU_MAX_THREADS : n;
}

static hc_status cpu_init(const hc_plugin_host *host, hc_plugin_ctx **out)
{
    hc_plugin_ctx *ctx = NULL;
    hc_status st;

    if (!out)
        return HC_E_INVALID;
    *out = NULL;
    if (host && host->size >= offsetof(hc_plugin_host, abi_minor) + sizeof(uint32_t) &&
        host->abi_major != HC_PLUGIN_ABI_MAJOR) {
        hc_kit_host_log(host, HC_LOG_INFO, "cpu: host speaks another plugin ABI major version");
        return HC_E_UNSUPPORTED;
    }
    /* Refuse to run kernels this CPU cannot execute, even if the loader
     * skipped probe. */
    if (hc_cpu_probe() == 0) {
        hc_kit_host_log(host, HC_LOG_INFO, "cpu: this CPU lacks AVX2/FMA/F16C or OS support for them");
        return HC_E_UNSUPPORTED;
    }
    ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return HC_E_NOMEM;
    /* Copy only what the host has: an older host's table is shorter. */
    hc_kit_host_copy(&ctx->host, host);
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_once(&kernels_once, hc_cpu_kernels_init);
    hc_cpu_model_name(ctx->cpu_name, sizeof ctx->cpu_name);
    int n = default_threads(&ctx->host);
    st = hc_cpu_pool_create(n, &ctx->pool);
    if (st != HC_OK) {
        hc_kit_host_log(host, HC_LOG_INFO, "cpu: cannot start the worker threads");
        goto out;
    }
    atomic_store(&ctx->n_threads, n);
    ctx->mm_task = hc_cpu_mm_task;
    ctx->mm_batch_task = hc_cpu_mm_batch_task;
#if defined(HC_CPU_HAVE_VNNI)
    if (hc_cpu_use_vnni()) {
        ctx->mm_task = hc_cpu_mm_task_vnni;
        ctx->mm_batch_task = hc_cpu_mm_batch_task_vnni;
    }
#endif
    ctx->avx512 = hc_cpu_use_avx512();
    hc_cpu_log(ctx, HC_LOG_INFO, "cpu-%s%s%s: %d worker thread%s on %s", hc_cpu_variant(),
               ctx->mm_task == hc_cpu_mm_task ? "" : " (AVX-VNNI dots)",
               ctx->avx512 ? " (AVX-512 Q4_0 axpy)" : "", n, n == 1 ? "" : "s", ctx->cpu_name);
    *out = ctx;
    ctx = NULL;
out:
    if (ctx) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
    }
    return st;
}

static void cpu_shutdown(hc_plugin_ctx *ctx)
{
    if (!ctx)
        return;
    hc_cpu_pool_destroy(ctx->pool);
    free(ctx->scratch);
    free(ctx->rope.cs);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

static const char *cpu_last_error(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->err : "";
}

static hc_status cpu_set_threads(hc_plugin_ctx *ctx, int n_threads)
{
    hc_cpu_pool *pool = NULL;
    hc_status st;

    if (!ctx)
        return HC_E_INVALID;
    if (n_threads < 0 || n_threads > HC_CPU_MAX_THREADS)
        return hc_cpu_fail(ctx, HC_E_INVALID, "set_threads: %d is outside [0, %d]", n_threads,
                           HC_CPU_MAX_THREADS);
    if (n_threads == 0) {
        hc_plugin_host h = ctx->host;
        h.n_threads = 0;
        n_threads = default_threads(&h);
    }
    pthread_mutex_lock(&ctx->lock);
    if (n_threads == hc_cpu_pool_size(ctx->pool)) {
        st = HC_OK;
        goto out;
    }
    /* Start the new pool before stopping the old one: on failure the
     * context keeps working with the threads it had. */
    st = hc_cpu_pool_create(n_threads, &pool);
    if (st != HC_OK) {
        hc_cpu_fail(ctx, st, "set_threads: cannot start %d threads", n_threads);
        goto out;
    }
    hc_cpu_pool_destroy(ctx->pool);
    ctx->pool = pool;
    atomic_store(&ctx->n_threads, n_threads);
    hc_cpu_log(ctx, HC_LOG_DEBUG, "cpu: now %d worker threads", n_threads);
out:
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* ---- the table ------------------------------------------------------------ */

#if defined(HC_CPU_VARIANT_AVX2)
#define CPU_VARIANT_NAME "avx2"
#else
#define CPU_VARIANT_NAME "generic"
#endif

static const hc_plugin_ops cpu_ops = {
    .size = sizeof(hc_plugin_ops),
    .abi_major = HC_PLUGIN_ABI_MAJOR,
    .abi_minor = HC_PLUGIN_ABI_MINOR,
    .family = "cpu",
    .variant = CPU_VARIANT_NAME,
    .version = "0.1.0",
    .probe = hc_cpu_probe,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .last_error = cpu_last_error,
    .device_count = hc_cpu_device_count,
    .device_info = hc_cpu_device_info,
    .device_open = hc_cpu_device_open,
    .device_close = hc_cpu_device_close,
    .buffer_alloc = hc_cpu_buffer_alloc,
    .buffer_free = hc_cpu_buffer_free,
    .buffer_wrap_host = hc_cpu_buffer_wrap_host,
    .buffer_host_ptr = hc_cpu_buffer_host_ptr,
    .stream_create = hc_cpu_stream_create,
    .stream_destroy = hc_cpu_stream_destroy,
    .stream_sync = hc_cpu_stream_sync,
    .upload = hc_cpu_upload,
    .download = hc_cpu_download,
    .copy = hc_cpu_copy,
    .matmul = hc_cpu_matmul,
    .matvec_rows = hc_cpu_matvec_rows,
    .axpy_rows = hc_cpu_axpy_rows,
    .rmsnorm = hc_cpu_rmsnorm,
    .rope = hc_cpu_rope,
    .attention = hc_cpu_attention,
    .unary = hc_cpu_unary,
    .binary = hc_cpu_binary,
    .glu = hc_cpu_glu,
    .op_cost = hc_cpu_op_cost,
    .set_threads = cpu_set_threads,
    .matmul_batch = hc_cpu_matmul_batch,
    .select_rows = hc_cpu_select_rows,
    .matvec_rows_counted = hc_cpu_matvec_rows_counted,
    .axpy_rows_counted = hc_cpu_axpy_rows_counted,
    .scatter_rows = hc_cpu_scatter_rows,
    .host_alloc = hc_cpu_host_alloc,
    .host_free = hc_cpu_host_free,
    .event_create = hc_cpu_event_create,
    .event_destroy = hc_cpu_event_destroy,
    .event_record = hc_cpu_event_record,
    .event_sync = hc_cpu_event_sync,
    .event_elapsed = hc_cpu_event_elapsed,
    /* capture_*, graph_*: NULL.  The stream runs each op as it is issued,
     * so there is nothing to record: the core issues every pass. */
};

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor; /* older minors read a prefix of the table; newer ones
                        see our size and treat missing entries as NULL */
    return abi_major == HC_PLUGIN_ABI_MAJOR ? &cpu_ops : NULL;
}
