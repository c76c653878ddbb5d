/*
 * A fake device plugin for the loader tests.  This one source is built many
 * times (tests/loader.cmake) with different -D options; each build is well
 * behaved except for the one thing its options break:
 *
 *   STUB_FAMILY, STUB_VARIANT  names in the table (must match the file name)
 *   STUB_PROBE=n               probe() result (default 10)
 *   STUB_N_DEVICES=n           devices reported (default 2; 0 = "driver absent")
 *   STUB_ABI_MAJOR=n           abi_major written in the table (default ours)
 *   STUB_SIZE_UPTO=field       the table's size stops just before `field`
 *   STUB_NULL_FIELD=field      that entry is left NULL
 *   STUB_NO_ENTRY              the entry symbol is misspelt (not found)
 *   STUB_ENTRY_NULL            the entry symbol returns NULL
 *   STUB_INIT_FAIL             init() fails; last_error(NULL) says why
 *   STUB_NO_DEVICE_REASON="..." the table's no_device_reason (ABI 1.3) returns it
 *   STUB_UNDEFINED             probe() calls a function no library defines, so
 *                              dlopen(RTLD_NOW) fails on a well-formed file
 *
 * Every stub's init() appends "family[-variant]" and a newline to the file
 * named by $HC_STUB_INIT_LOG when it is set, so a test can tell whether a
 * command initialised a plugin at all (the core initialises lazily).
 *
 * Devices do nothing: buffers and compute return HC_E_UNSUPPORTED.  What the
 * tests look at is the loader's verdict, the host struct it passes (init
 * checks it and logs through it) and set_threads/device_info plumbing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/plugin.h"

#ifndef STUB_FAMILY
#define STUB_FAMILY "stub"
#endif
#ifndef STUB_VARIANT
#define STUB_VARIANT ""
#endif
#ifndef STUB_PROBE
#define STUB_PROBE 10
#endif
#ifndef STUB_N_DEVICES
#define STUB_N_DEVICES 2
#endif
#ifndef STUB_ABI_MAJOR
#define STUB_ABI_MAJOR HC_PLUGIN_ABI_MAJOR
#endif

struct hc_plugin_ctx {
    int n_threads;
    char err[128];
};

/* Errors with no context (a failed init) are kept here. */
static char g_err[128];

#ifdef STUB_UNDEFINED
int hc_stub_function_nobody_defines(void);
#endif

static int stub_probe(void)
{
#ifdef STUB_UNDEFINED
    return hc_stub_function_nobody_defines();
#else
    return STUB_PROBE;
#endif
}

static void note_init(void)
{
    const char *path = getenv("HC_STUB_INIT_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%s%s%s\n", STUB_FAMILY, STUB_VARIANT[0] ? "-" : "", STUB_VARIANT);
    fclose(f);
}

static hc_status stub_init(const hc_plugin_host *host, hc_plugin_ctx **out)
{
    note_init();
#ifdef STUB_INIT_FAIL
    (void)host;
    (void)out;
    snprintf(g_err, sizeof g_err, "stub: simulated driver failure (code 42)");
    return HC_E_DEVICE;
#else
    if (!host || host->size < sizeof(hc_plugin_host) || host->abi_major != HC_PLUGIN_ABI_MAJOR) {
        snprintf(g_err, sizeof g_err, "stub: bad host struct");
        return HC_E_INVALID;
    }
    hc_plugin_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(g_err, sizeof g_err, "stub: out of memory");
        return HC_E_NOMEM;
    }
    ctx->n_threads = host->n_threads;
    if (host->log) {
        char msg[96];
        snprintf(msg, sizeof msg, "stub init: host abi %u.%u, %d threads", host->abi_major,
                 host->abi_minor, host->n_threads);
        host->log(host->log_user, HC_LOG_INFO, msg);
    }
    *out = ctx;
    return HC_OK;
#endif
}

static void stub_shutdown(hc_plugin_ctx *ctx)
{
    free(ctx);
}

static const char *stub_last_error(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->err : g_err;
}

static int stub_device_count(hc_plugin_ctx *ctx)
{
    (void)ctx;
    return STUB_N_DEVICES;
}

#ifdef STUB_NO_DEVICE_REASON
static const char *stub_no_device_reason(hc_plugin_ctx *ctx)
{
    (void)ctx;
    return STUB_NO_DEVICE_REASON;
}
#endif

static hc_status stub_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out)
{
    if (index < 0 || index >= STUB_N_DEVICES || !out || out->size < sizeof *out) {
        snprintf(ctx->err, sizeof ctx->err, "stub: no device %d", index);
        return HC_E_INVALID;
    }
    snprintf(out->name, sizeof out->name, "stub %s%s%s device %d", STUB_FAMILY,
             STUB_VARIANT[0] ? "-" : "", STUB_VARIANT, index);
    out->kind = HC_DEVICE_SOFT;
    out->caps = HC_CAP_HOST_MAPPED;
    out->mem_total = (uint64_t)3 << 30;
    out->mem_free = (uint64_t)1 << 30;
    out->max_buffer = (uint64_t)1 << 30;
    out->n_threads = ctx->n_threads;
    return HC_OK;
}

static hc_status stub_device_open(hc_plugin_ctx *ctx, int index, hc_device **out)
{
    (void)index;
    (void)out;
    snprintf(ctx->err, sizeof ctx->err, "stub: devices cannot be opened");
    return HC_E_UNSUPPORTED;
}

static void stub_device_close(hc_device *dev)
{
    (void)dev;
}

static hc_status stub_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    (void)dev;
    (void)size;
    (void)out;
    return HC_E_UNSUPPORTED;
}

static void stub_buffer_free(hc_buffer *buf)
{
    (void)buf;
}

static hc_status stub_stream_create(hc_device *dev, hc_stream **out)
{
    (void)dev;
    (void)out;
    return HC_E_UNSUPPORTED;
}

static void stub_stream_destroy(hc_stream *s)
{
    (void)s;
}

static hc_status stub_stream_sync(hc_stream *s)
{
    (void)s;
    return HC_E_UNSUPPORTED;
}

static hc_status stub_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    return HC_E_UNSUPPORTED;
}

static hc_status stub_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    return HC_E_UNSUPPORTED;
}

static hc_status stub_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                             hc_ref x, int64_t n, hc_ref y)
{
    return HC_E_UNSUPPORTED;
}

static hc_status stub_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                           hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    return HC_E_UNSUPPORTED;
}

static hc_status stub_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n,
                          float shift)
{
    return HC_E_UNSUPPORTED;
}

static double stub_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols,
                           int64_t n)
{
    return -1.0;
}

static hc_status stub_set_threads(hc_plugin_ctx *ctx, int n_threads)
{
    if (n_threads <= 0) {
        snprintf(ctx->err, sizeof ctx->err, "stub: bad thread count %d", n_threads);
        return HC_E_INVALID;
    }
    ctx->n_threads = n_threads;
    return HC_OK;
}

/* Filled on first use rather than with an initializer so that a build can
 * blank one entry (STUB_NULL_FIELD) or cut the size without repeating the
 * whole table. */
static hc_plugin_ops g_ops;

static const hc_plugin_ops *stub_table(void)
{
    hc_plugin_ops *o = &g_ops;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
#ifdef STUB_SIZE_UPTO
    o->size = offsetof(hc_plugin_ops, STUB_SIZE_UPTO);
#endif
    o->abi_major = STUB_ABI_MAJOR;
    o->abi_minor = HC_PLUGIN_ABI_MINOR;
    o->family = STUB_FAMILY;
    o->variant = STUB_VARIANT;
    o->version = "stub-1";
    o->probe = stub_probe;
    o->init = stub_init;
    o->shutdown = stub_shutdown;
    o->last_error = stub_last_error;
    o->device_count = stub_device_count;
    o->device_info = stub_device_info;
    o->device_open = stub_device_open;
    o->device_close = stub_device_close;
    o->buffer_alloc = stub_buffer_alloc;
    o->buffer_free = stub_buffer_free;
    o->stream_create = stub_stream_create;
    o->stream_destroy = stub_stream_destroy;
    o->stream_sync = stub_stream_sync;
    o->upload = stub_upload;
    o->download = stub_download;
    o->matmul = stub_matmul;
    o->matvec_rows = stub_rows;
    o->axpy_rows = stub_rows;
    /* Two optional entries on either side of a typical cut, so a test can
     * tell "absent because of size" from "absent because NULL". */
    o->glu = stub_glu;
    o->op_cost = stub_op_cost;
    o->set_threads = stub_set_threads;
#ifdef STUB_NO_DEVICE_REASON
    o->no_device_reason = stub_no_device_reason;
#endif
#ifdef STUB_NULL_FIELD
    o->STUB_NULL_FIELD = NULL;
#endif
    return o;
}

#ifdef STUB_NO_ENTRY
#define STUB_ENTRY_NAME hc_plugin_entry_misspelt
#else
#define STUB_ENTRY_NAME hc_plugin_entry
#endif

HC_PLUGIN_EXPORT const hc_plugin_ops *STUB_ENTRY_NAME(uint32_t abi_major, uint32_t abi_minor);

HC_PLUGIN_EXPORT const hc_plugin_ops *STUB_ENTRY_NAME(uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor;
#ifdef STUB_ENTRY_NULL
    (void)abi_major;
    (void)stub_table; /* built but never handed out */
    return NULL;
#else
    /* A real plugin returns NULL for a major it cannot serve; the stubs
     * answer anyway so the core's own major check is what gets tested. */
    (void)abi_major;
    return stub_table();
#endif
}
