/*
 * A stub GPU plugin for the core's call-time fallback (tests/test_fallback.c):
 * one "GPU" device whose buffers are host memory, synchronous streams, and
 * every op the core calls computed by the reference kernels of core/ref
 * (compiled into this module: a test stub may; a real plugin includes
 * plugin.h alone).  It has no buffer_host_ptr and no HC_CAP_HOST_MAPPED, so
 * the core treats its memory as a discrete GPU's: everything crosses by
 * upload and download.
 *
 * It refuses, with HC_E_UNSUPPORTED and before touching anything, the
 * calls a real plugin might not take (each a -D option, off when unset):
 *   STUB_GPU_MAX_LIST=n    matvec_rows and axpy_rows with more than n rows
 *                          listed
 *   STUB_GPU_MAX_ROWS=n    matmul of a weight with more than n rows
 *   STUB_GPU_ONE_TOKEN_ATTENTION  attention of more than one token
 * op_cost is NULL, so the core learns of a refusal only from the call.
 * Every refusal is counted in the file named by $HC_STUB_GPU_REFUSALS
 * (one line per refused call, "op n_idx|rows|n_tok"), so a test can tell
 * that refusals happened.
 *
 * Every argument is checked (refs inside their buffers, shapes, op codes)
 * so the conformance suite can run on it too.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/plugin.h"
#include "hotcold/plugin_kit.h"
#include "ref/ref.h"

#ifndef STUB_GPU_FAMILY
#define STUB_GPU_FAMILY "refgpu"
#endif

#define MAGIC_BUFFER 0x42465253u /* "SRFB" */

struct hc_plugin_ctx {
    hc_plugin_host host;
    char err[HC_KIT_MSG_LEN];
};
struct hc_device {
    hc_plugin_ctx *ctx;
};
struct hc_buffer {
    uint32_t magic;
    hc_device *dev;
    uint64_t size;
    unsigned char *data;
};
struct hc_stream {
    hc_device *dev;
};

static char g_err[HC_KIT_MSG_LEN]; /* last_error(NULL): a failed init */

/* The kit's checks report here: the context's last_error, logged at DEBUG. */
static hc_status ctx_fail(void *user, hc_status st, const char *msg)
{
    hc_plugin_ctx *ctx = user;
    hc_kit_set_error(ctx ? ctx->err : g_err, sizeof g_err, msg);
    if (ctx)
        hc_kit_host_log(&ctx->host, HC_LOG_DEBUG, msg);
    return st;
}

#if defined(STUB_GPU_MAX_LIST) || defined(STUB_GPU_MAX_ROWS) || defined(STUB_GPU_ONE_TOKEN_ATTENTION)
static hc_status refuse(hc_plugin_ctx *ctx, const char *op, long long size, const char *what)
{
    const char *path = getenv("HC_STUB_GPU_REFUSALS");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s %lld\n", op, size);
        fclose(f);
    }
    return hc_kit_failf(ctx_fail, ctx, HC_E_UNSUPPORTED, "%s: %lld %s: more than this stub takes",
                        op, size, what);
}
#endif

/* Host address of `bytes` at r, checked to lie inside r's buffer. */
static hc_status at(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                    uint64_t bytes, uint64_t align, void **p)
{
    *p = NULL;
    if (!r.buf || r.buf->magic != MAGIC_BUFFER)
        return hc_kit_failf(ctx_fail, ctx, HC_E_INVALID, "%s: %s: not a buffer of this plugin",
                            op, name);
    hc_status st = hc_kit_check_range(ctx_fail, ctx, op, name, r.off, bytes, r.buf->size, align,
                                      0);
    if (st == HC_OK)
        *p = r.buf->data + r.off;
    return st;
}

/* count1 x count2 elements of `elem` bytes at r. */
static hc_status at_n(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                      int64_t count1, int64_t count2, uint64_t elem, void **p)
{
    uint64_t bytes;
    hc_status st = hc_kit_check_count(ctx_fail, ctx, op, name, count1, count2, elem, &bytes);
    return st != HC_OK ? st : at(ctx, op, name, r, bytes, elem, p);
}

static hc_plugin_ctx *stream_ctx(hc_stream *s)
{
    return s && s->dev ? s->dev->ctx : NULL;
}

/* ---- lifecycle, device, buffers, streams --------------------------------- */

static int sg_probe(void)
{
    return 1;
}

static hc_status sg_init(const hc_plugin_host *host, hc_plugin_ctx **out)
{
    if (!out)
        return HC_E_INVALID;
    *out = NULL;
    hc_plugin_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return ctx_fail(NULL, HC_E_NOMEM, "refgpu: out of memory");
    hc_kit_host_copy(&ctx->host, host);
    *out = ctx;
    return HC_OK;
}

static void sg_shutdown(hc_plugin_ctx *ctx)
{
    free(ctx);
}

static const char *sg_last_error(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->err : g_err;
}

static int sg_device_count(hc_plugin_ctx *ctx)
{
    return ctx ? 1 : 0;
}

static hc_status sg_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out)
{
    if (index != 0 || !out)
        return hc_kit_failf(ctx_fail, ctx, HC_E_NODEV, "refgpu: no device %d", index);
    hc_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "reference-kernel stub GPU");
    info.kind = HC_DEVICE_GPU;
    info.mem_total = (uint64_t)1 << 30;
    info.mem_free = info.mem_total;
    info.max_buffer = info.mem_total;
    hc_kit_device_info_copy(out, &info);
    return HC_OK;
}

static hc_status sg_device_open(hc_plugin_ctx *ctx, int index, hc_device **out)
{
    if (index != 0 || !out)
        return hc_kit_failf(ctx_fail, ctx, HC_E_NODEV, "refgpu: no device %d", index);
    hc_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return ctx_fail(ctx, HC_E_NOMEM, "refgpu: out of memory");
    dev->ctx = ctx;
    *out = dev;
    return HC_OK;
}

static void sg_device_close(hc_device *dev)
{
    free(dev);
}

static hc_status sg_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    hc_buffer *b = calloc(1, sizeof *b);
    unsigned char *data = size && size <= SIZE_MAX ? calloc(1, (size_t)size) : NULL;
    if (!b || (size && !data)) {
        free(b);
        free(data);
        return hc_kit_failf(ctx_fail, dev->ctx, HC_E_NOMEM, "refgpu: cannot allocate %llu bytes",
                            (unsigned long long)size);
    }
    *b = (hc_buffer){MAGIC_BUFFER, dev, size, data};
    *out = b;
    return HC_OK;
}

static void sg_buffer_free(hc_buffer *b)
{
    if (!b || b->magic != MAGIC_BUFFER)
        return;
    b->magic = 0;
    free(b->data);
    free(b);
}

static hc_status sg_stream_create(hc_device *dev, hc_stream **out)
{
    hc_stream *s = calloc(1, sizeof *s);
    if (!s)
        return ctx_fail(dev->ctx, HC_E_NOMEM, "refgpu: out of memory");
    s->dev = dev;
    *out = s;
    return HC_OK;
}

static void sg_stream_destroy(hc_stream *s)
{
    free(s);
}

static hc_status sg_stream_sync(hc_stream *s)
{
    return s ? HC_OK : HC_E_INVALID; /* every op has finished when it returns */
}

static hc_status sg_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    void *p;
    hc_status st = at(stream_ctx(s), "upload", "dst", dst, bytes, 1, &p);
    if (st == HC_OK && bytes)
        memcpy(p, src, (size_t)bytes);
    return st;
}

static hc_status sg_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    void *p;
    hc_status st = at(stream_ctx(s), "download", "src", src, bytes, 1, &p);
    if (st == HC_OK && bytes)
        memcpy(dst, p, (size_t)bytes);
    return st;
}

/* ---- the weight ops -------------------------------------------------------- */

/* W (rows x cols of t), an input of n x in_cols and an output of n x
 * out_cols F32; the list when idx is not NULL. */
static hc_status weight_args(hc_plugin_ctx *ctx, const char *op, hc_type t, hc_ref w,
                             int64_t rows, int64_t cols, hc_ref in, int64_t in_cols, int64_t n,
                             hc_ref out, int64_t out_cols, const hc_ref *idx, int64_t n_idx,
                             void **W, void **I, void **O, void **L)
{
    uint64_t row_bytes, bytes;
    hc_status st = hc_kit_check_weights(ctx_fail, ctx, op, t, rows, cols, &row_bytes, &bytes);
    if (st == HC_OK)
        st = at(ctx, op, "w", w, bytes, hc_kit_weight_align(t), W);
    if (st == HC_OK)
        st = at_n(ctx, op, "x", in, n, in_cols, 4, I);
    if (st == HC_OK)
        st = at_n(ctx, op, "y", out, n, out_cols, 4, O);
    if (st == HC_OK && idx) {
        st = at_n(ctx, op, "idx", *idx, n_idx, 1, 4, L);
        if (st == HC_OK)
            st = hc_kit_check_rows(ctx_fail, ctx, op, *L, n_idx, rows);
    }
    return st;
}

static hc_status sg_matmul(hc_stream *s, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                           int64_t n, hc_ref y)
{
    hc_plugin_ctx *ctx = stream_ctx(s);
    void *W = NULL, *X = NULL, *Y = NULL;
#ifdef STUB_GPU_MAX_ROWS
    if (rows > STUB_GPU_MAX_ROWS)
        return refuse(ctx, "matmul", (long long)rows, "weight rows");
#endif
    hc_status st =
        weight_args(ctx, "matmul", t, w, rows, cols, x, cols, n, y, rows, NULL, 0, &W, &X, &Y, NULL);
    if (st == HC_OK)
        hc_scalar_matmul(t, W, rows, cols, X, n, Y);
    return st;
}

static hc_status sg_matvec_rows(hc_stream *s, hc_type t, hc_ref w, int64_t rows, int64_t cols,
                                hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    hc_plugin_ctx *ctx = stream_ctx(s);
    void *W = NULL, *X = NULL, *Y = NULL, *L = NULL;
#ifdef STUB_GPU_MAX_LIST
    if (n_idx > STUB_GPU_MAX_LIST)
        return refuse(ctx, "matvec_rows", (long long)n_idx, "rows listed");
#endif
    hc_status st = weight_args(ctx, "matvec_rows", t, w, rows, cols, x, cols, n, y, rows, &idx,
                               n_idx, &W, &X, &Y, &L);
    if (st == HC_OK)
        hc_scalar_matvec_rows(t, W, rows, cols, X, n, L, n_idx, Y);
    return st;
}

static hc_status sg_axpy_rows(hc_stream *s, hc_type t, hc_ref wt, int64_t rows, int64_t cols,
                              hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    hc_plugin_ctx *ctx = stream_ctx(s);
    void *W = NULL, *H = NULL, *Y = NULL, *L = NULL;
#ifdef STUB_GPU_MAX_LIST
    if (n_idx > STUB_GPU_MAX_LIST)
        return refuse(ctx, "axpy_rows", (long long)n_idx, "rows listed");
#endif
    hc_status st = weight_args(ctx, "axpy_rows", t, wt, rows, cols, h, rows, n, y, cols, &idx,
                               n_idx, &W, &H, &Y, &L);
    if (st == HC_OK)
        hc_scalar_axpy_rows(t, W, rows, cols, H, n, L, n_idx, Y);
    return st;
}

/* ---- the layer ops -------------------------------------------------------- */

static hc_status sg_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                            float eps)
{
    hc_plugin_ctx *ctx = stream_ctx(s);
    void *X = NULL, *W = NULL, *Y = NULL;
    hc_status st = at_n(ctx, "rmsnorm", "x", x, n, dim, 4, &X);
    if (st == HC_OK)
        st = at_n(ctx, "rmsnorm", "w", w, dim, 1, 4, &W);
    if (st == HC_OK)
        st = at_n(ctx, "rmsnorm", "y", y, n, dim, 4, &Y);
    if (st == HC_OK)
        hc_scalar_rmsnorm(X, W, Y, n, dim, eps);
    return st;
}

static hc_status sg_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                         int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    hc_plugin_ctx *ctx = stream_ctx(s);
    void *X = NULL, *P = NULL;
    if (n_head < 0 || head_dim < 0 || n_rot < 0 || n_rot > head_dim || n_rot % 2 ||
        (mode != HC_ROPE_NORM && mode != HC_ROPE_NEOX))
        return hc_kit_failf(ctx_fail, ctx, HC_E_INVALID, "rope: bad head shape or mode %d", mode);
    hc_status st = at_n(ctx, "rope", "x", x, n_tok, n_head * head_dim, 4, &X);
    if (st == HC_OK)
        st = at_n(ctx, "rope", "pos", pos, n_tok, 1, 4, &P);
    if (st == HC_OK)
        hc_scalar_rope(X, n_tok, n_head, head_dim, n_rot, P, freq_base, freq_scale, mode);
    return st;
}

static hc_status sg_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out,
                              int64_t n_tok, hc_ref pos, int64_t n_head, int64_t n_head_kv,
                              int64_t head_dim, float scale)
{
    hc_plugin_ctx *ctx = stream_ctx(s);
    void *Q = NULL, *K = NULL, *V = NULL, *O = NULL, *P = NULL;
#ifdef STUB_GPU_ONE_TOKEN_ATTENTION
    if (n_tok > 1)
        return refuse(ctx, "attention", (long long)n_tok, "tokens");
#endif
    if (n_head <= 0 || n_head_kv <= 0 || head_dim <= 0 || n_head % n_head_kv)
        return hc_kit_failf(ctx_fail, ctx, HC_E_INVALID, "attention: bad heads %lld/%lld",
                            (long long)n_head, (long long)n_head_kv);
    hc_status st = at_n(ctx, "attention", "pos", pos, n_tok, 1, 4, &P);
    int64_t n_pos = 0;
    for (int64_t t = 0; st == HC_OK && t < n_tok; t++) {
        int32_t p = ((const int32_t *)P)[t];
        if (p < 0)
            return hc_kit_failf(ctx_fail, ctx, HC_E_INVALID, "attention: pos[%lld] = %d",
                                (long long)t, (int)p);
        n_pos = p + 1 > n_pos ? p + 1 : n_pos;
    }
    if (st == HC_OK)
        st = at_n(ctx, "attention", "q", q, n_tok, n_head * head_dim, 4, &Q);
    if (st == HC_OK)
        st = at_n(ctx, "attention", "k", k, n_pos, n_head_kv * head_dim, 4, &K);
    if (st == HC_OK)
        st = at_n(ctx, "attention", "v", v, n_pos, n_head_kv * head_dim, 4, &V);
    if (st == HC_OK)
        st = at_n(ctx, "attention", "out", out, n_tok, n_head * head_dim, 4, &O);
    if (st == HC_OK)
        hc_scalar_attention(Q, K, V, O, n_tok, P, n_head, n_head_kv, head_dim, scale);
    return st;
}

/* The element-wise ops: n floats in each of their operands. */
static hc_status elementwise(hc_plugin_ctx *ctx, const char *op, int code, int n_codes,
                             hc_ref a, hc_ref b, hc_ref y, int64_t n, void **A, void **B,
                             void **Y)
{
    if (code < 0 || code >= n_codes)
        return hc_kit_failf(ctx_fail, ctx, HC_E_INVALID, "%s: unknown op %d", op, code);
    hc_status st = at_n(ctx, op, "a", a, n, 1, 4, A);
    if (st == HC_OK && B)
        st = at_n(ctx, op, "b", b, n, 1, 4, B);
    if (st == HC_OK)
        st = at_n(ctx, op, "y", y, n, 1, 4, Y);
    return st;
}

static hc_status sg_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    void *X = NULL, *Y = NULL;
    hc_status st = elementwise(stream_ctx(s), "unary", op, 3, x, x, y, n, &X, NULL, &Y);
    if (st == HC_OK)
        hc_scalar_unary(op, X, Y, n, param);
    return st;
}

static hc_status sg_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    void *A = NULL, *B = NULL, *Y = NULL;
    hc_status st = elementwise(stream_ctx(s), "binary", op, 2, a, b, y, n, &A, &B, &Y);
    if (st == HC_OK)
        hc_scalar_binary(op, A, B, Y, n);
    return st;
}

static hc_status sg_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n,
                        float shift)
{
    void *G = NULL, *U = NULL, *H = NULL;
    hc_status st = elementwise(stream_ctx(s), "glu", act, 3, g, u, h, n, &G, &U, &H);
    if (st == HC_OK)
        hc_scalar_glu(act, G, U, H, n, shift);
    return st;
}

static const hc_plugin_ops stub_gpu_ops = {
    .size = sizeof(hc_plugin_ops),
    .abi_major = HC_PLUGIN_ABI_MAJOR,
    .abi_minor = HC_PLUGIN_ABI_MINOR,
    .family = STUB_GPU_FAMILY,
    .variant = "",
    .version = "stub-gpu-1",
    .probe = sg_probe,
    .init = sg_init,
    .shutdown = sg_shutdown,
    .last_error = sg_last_error,
    .device_count = sg_device_count,
    .device_info = sg_device_info,
    .device_open = sg_device_open,
    .device_close = sg_device_close,
    .buffer_alloc = sg_buffer_alloc,
    .buffer_free = sg_buffer_free,
    .stream_create = sg_stream_create,
    .stream_destroy = sg_stream_destroy,
    .stream_sync = sg_stream_sync,
    .upload = sg_upload,
    .download = sg_download,
    .matmul = sg_matmul,
    .matvec_rows = sg_matvec_rows,
    .axpy_rows = sg_axpy_rows,
    .rmsnorm = sg_rmsnorm,
    .rope = sg_rope,
    .attention = sg_attention,
    .unary = sg_unary,
    .binary = sg_binary,
    .glu = sg_glu,
};

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor);

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor;
    return abi_major == HC_PLUGIN_ABI_MAJOR ? &stub_gpu_ops : NULL;
}
