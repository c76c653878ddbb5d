/*
 * hc_example.c — the smallest complete hotcold device plugin.
 *
 * One "device" that is plain host memory, streams that run every op at once
 * (in order, trivially), and scalar kernels for the three required compute
 * entries over the four GGUF weight types.  Every optional entry is NULL, so
 * the core runs those ops on the CPU plugin.
 *
 * The argument checks and their messages come from hotcold/plugin_kit.h,
 * header-only like plugin.h: the plugin still links nothing from hotcold.
 *
 * Build (outside the hotcold tree):
 *   cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -I<hotcold>/include \
 *      -o libhc-example.so hc_example.c
 * Use:  HOTCOLD_PLUGIN_PATH=$PWD HOTCOLD_PLUGINS=cpu,example hotcold devices
 * See docs/PLUGINS.md for the rules this file follows.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/plugin.h"     /* the ABI */
#include "hotcold/plugin_kit.h" /* checks and messages every plugin needs */

struct hc_plugin_ctx {
    char err[HC_KIT_MSG_LEN]; /* detail of the last failure, for last_error() */
    hc_plugin_host host;      /* the host's log callback */
};
struct hc_device {
    hc_plugin_ctx *ctx;
};
struct hc_buffer {
    hc_device *dev;
    uint64_t size;
    unsigned char *data;
};
struct hc_stream {
    hc_device *dev;
};

/* Failures that happen before a context exists (init): last_error(NULL). */
static char g_err[HC_KIT_MSG_LEN];

/* Where every failure goes (the kit's checks call it too): the context's
 * last_error, and the host's log at DEBUG. */
static hc_status record(void *user, hc_status st, const char *msg)
{
    hc_plugin_ctx *ctx = user;
    hc_kit_set_error(ctx ? ctx->err : g_err, sizeof g_err, msg);
    if (ctx)
        hc_kit_host_log(&ctx->host, HC_LOG_DEBUG, msg);
    return st;
}

#if defined(__GNUC__)
static hc_status fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#endif
static hc_status fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = hc_kit_vfailf(record, ctx, st, fmt, ap);
    va_end(ap);
    return st;
}

/* Host address of `bytes` bytes at r, every one of them inside r's buffer
 * (else a failure naming op and argument). */
static hc_status at(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                    uint64_t bytes, uint64_t align, unsigned char **p)
{
    *p = NULL;
    if (!r.buf)
        return fail(ctx, HC_E_INVALID, "%s: %s: buffer is NULL", op, name);
    hc_status st = hc_kit_check_range(record, ctx, op, name, r.off, bytes, r.buf->size, align, 0);
    if (st == HC_OK)
        *p = r.buf->data + r.off;
    return st;
}

/* count1 x count2 elements of elem bytes at r. */
static hc_status at_n(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                      int64_t count1, int64_t count2, uint64_t elem, unsigned char **p)
{
    uint64_t bytes;
    hc_status st = hc_kit_check_count(record, ctx, op, name, count1, count2, elem, &bytes);
    return st != HC_OK ? st : at(ctx, op, name, r, bytes, elem, p);
}

/* ---- lifecycle ---------------------------------------------------------- */

static int ex_probe(void)
{
    return 1; /* runs anywhere, but is nobody's first choice */
}

static hc_status ex_init(const hc_plugin_host *host, hc_plugin_ctx **out)
{
    if (!host || !out || host->abi_major != HC_PLUGIN_ABI_MAJOR)
        return fail(NULL, HC_E_INVALID, "example: bad host struct");
    hc_plugin_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return fail(NULL, HC_E_NOMEM, "example: out of memory");
    hc_kit_host_copy(&ctx->host, host); /* as far as the host's size says */
    /* Never print: talk through the host's log callback when it has one. */
    hc_kit_host_log(&ctx->host, HC_LOG_DEBUG, "example plugin ready");
    *out = ctx;
    return HC_OK;
}

static void ex_shutdown(hc_plugin_ctx *ctx)
{
    free(ctx);
}

static const char *ex_last_error(hc_plugin_ctx *ctx)
{
    return ctx ? ctx->err : g_err;
}

/* ---- the one device ----------------------------------------------------- */

static int ex_device_count(hc_plugin_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static hc_status ex_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out)
{
    if (index != 0 || !out)
        return fail(ctx, HC_E_NODEV, "example: no device %d", index);
    hc_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "example scalar device");
    info.kind = HC_DEVICE_CPU;
    info.caps = HC_CAP_HOST_MAPPED;
    info.mem_total = (uint64_t)1 << 30; /* a made-up budget */
    info.mem_free = info.mem_total;
    info.max_buffer = info.mem_total;
    info.n_threads = 1;
    /* Fill only what the caller's struct has room for (it grows at the end). */
    hc_kit_device_info_copy(out, &info);
    return HC_OK;
}

static hc_status ex_device_open(hc_plugin_ctx *ctx, int index, hc_device **out)
{
    if (index != 0)
        return fail(ctx, HC_E_NODEV, "example: no device %d", index);
    hc_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return fail(ctx, HC_E_NOMEM, "example: out of memory");
    dev->ctx = ctx;
    *out = dev;
    return HC_OK;
}

static void ex_device_close(hc_device *dev)
{
    free(dev);
}

/* ---- buffers and streams ------------------------------------------------ */

static hc_status ex_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    hc_buffer *b = calloc(1, sizeof *b);
    /* calloc: fresh buffers read as zeros, which makes bugs reproducible. */
    unsigned char *data = size ? calloc(1, (size_t)size) : NULL;
    if (!b || (size && !data)) {
        free(b);
        free(data);
        return fail(dev->ctx, HC_E_NOMEM, "example: cannot allocate %llu bytes",
                    (unsigned long long)size);
    }
    b->dev = dev;
    b->size = size;
    b->data = data;
    *out = b;
    return HC_OK;
}

static void ex_buffer_free(hc_buffer *buf)
{
    if (buf)
        free(buf->data);
    free(buf);
}

static void *ex_buffer_host_ptr(hc_buffer *buf)
{
    return buf ? buf->data : NULL;
}

static hc_status ex_stream_create(hc_device *dev, hc_stream **out)
{
    hc_stream *s = calloc(1, sizeof *s);
    if (!s)
        return fail(dev->ctx, HC_E_NOMEM, "example: out of memory");
    s->dev = dev;
    *out = s;
    return HC_OK;
}

static void ex_stream_destroy(hc_stream *s)
{
    free(s);
}

/* Every op below has finished when it returns, so there is nothing to wait for. */
static hc_status ex_stream_sync(hc_stream *s)
{
    (void)s;
    return HC_OK;
}

static hc_status ex_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    unsigned char *d;
    hc_status st = at(s->dev->ctx, "upload", "dst", dst, bytes, 1, &d);
    if (st == HC_OK && bytes)
        memcpy(d, src, (size_t)bytes);
    return st;
}

static hc_status ex_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    unsigned char *p;
    hc_status st = at(s->dev->ctx, "download", "src", src, bytes, 1, &p);
    if (st == HC_OK && bytes)
        memcpy(dst, p, (size_t)bytes);
    return st;
}

/* ---- compute ------------------------------------------------------------ */

/* IEEE half -> float.  The exponent is rebased from bias 15 to 127;
 * subnormal halves are normalised by hand. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
    else if (exp != 0)
        bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (man == 0)
        bits = sign; /* +-0 */
    else {
        exp = 113; /* shift the leading 1 up to the implicit bit */
        while (!(man & 0x400u)) {
            man <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Element c of a weight row in GGUF's layout for type t.  One element at a
 * time is slow but obviously right, which is this plugin's whole point.
 * memcpy loads: weights may sit at any byte offset; GGUF is little-endian,
 * like every host hotcold runs on. */
static float weight_at(hc_type t, const unsigned char *row, int64_t c)
{
    float f;
    uint16_t h;
    switch (t) {
    case HC_TYPE_F32:
        memcpy(&f, row + 4 * c, sizeof f);
        return f;
    case HC_TYPE_F16:
        memcpy(&h, row + 2 * c, sizeof h);
        return half_to_float(h);
    case HC_TYPE_Q8_0: {
        const unsigned char *b = row + (c / HC_QK8_0) * HC_Q8_0_BLOCK_BYTES;
        memcpy(&h, b, sizeof h);
        return half_to_float(h) * (float)(int8_t)b[2 + c % HC_QK8_0];
    }
    case HC_TYPE_Q4_0: {
        const unsigned char *b = row + (c / HC_QK4_0) * HC_Q4_0_BLOCK_BYTES;
        int j = (int)(c % HC_QK4_0);
        int q = j < 16 ? (b[2 + j] & 0x0f) : (b[2 + j - 16] >> 4);
        memcpy(&h, b, sizeof h);
        return half_to_float(h) * (float)(q - 8);
    }
    case HC_TYPE_Q6_K: { /* bit placement as plugin.h documents it */
        const unsigned char *b = row + (c / HC_QK_K) * HC_Q6_K_BLOCK_BYTES;
        int i = (int)(c % HC_QK_K), hf = i / 128, g = i % 128 / 32, l = i % 32;
        int lo = b[64 * hf + 32 * (g & 1) + l] >> (g < 2 ? 0 : 4) & 0x0f;
        int hi = b[128 + 32 * hf + l] >> (2 * g) & 3;
        memcpy(&h, b + 208, sizeof h);
        return half_to_float(h) * (float)(int8_t)b[192 + i / 16] * (float)((lo | hi << 4) - 32);
    }
    }
    return 0.0f;
}

/* Common argument checks.  W is `rows` rows of `cols` weights, X is
 * n x xcols and Y n x ycols F32; on success their host addresses.  The
 * kit says what is wrong, naming the op and the argument. */
static hc_status check_args(hc_stream *s, const char *op, hc_type wtype, hc_ref w, int64_t rows,
                            int64_t cols, hc_ref x, int64_t xcols, int64_t n, hc_ref y,
                            int64_t ycols, const unsigned char **W, uint64_t *row_bytes,
                            const float **X, float **Y)
{
    hc_plugin_ctx *ctx = s->dev->ctx;
    unsigned char *wp, *xp, *yp;
    uint64_t bytes;
    hc_status st = hc_kit_check_weights(record, ctx, op, wtype, rows, cols, row_bytes, &bytes);
    if (st == HC_OK)
        st = at(ctx, op, "w", w, bytes, 1, &wp);
    if (st == HC_OK)
        st = at_n(ctx, op, "x", x, n, xcols, 4, &xp);
    if (st == HC_OK)
        st = at_n(ctx, op, "y", y, n, ycols, 4, &yp);
    if (st != HC_OK)
        return st;
    *W = wp;
    *X = (const float *)xp;
    *Y = (float *)yp;
    return HC_OK;
}

/* A row list: n_idx int32 entries, each in [0, rows). */
static hc_status check_rows(hc_stream *s, const char *op, hc_ref idx, int64_t n_idx,
                            int64_t rows, const int32_t **I)
{
    unsigned char *p;
    hc_status st = at_n(s->dev->ctx, op, "idx", idx, n_idx, 1, 4, &p);
    if (st != HC_OK)
        return st;
    *I = (const int32_t *)p;
    return hc_kit_check_rows(record, s->dev->ctx, op, *I, n_idx, rows);
}

/* sum_c W[r][c] * x[c], in one fixed order: results never depend on
 * anything but the inputs. */
static float dot_row(hc_type t, const unsigned char *row, const float *x, int64_t cols)
{
    double acc = 0.0;
    for (int64_t c = 0; c < cols; c++)
        acc += (double)weight_at(t, row, c) * x[c];
    return (float)acc;
}

static hc_status ex_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                           hc_ref x, int64_t n, hc_ref y)
{
    const unsigned char *W;
    const float *X;
    float *Y;
    uint64_t rb;
    hc_status st =
        check_args(s, "matmul", wtype, w, rows, cols, x, cols, n, y, rows, &W, &rb, &X, &Y);
    if (st != HC_OK)
        return st;
    for (int64_t t = 0; t < n; t++)
        for (int64_t r = 0; r < rows; r++)
            Y[t * rows + r] = dot_row(wtype, W + (uint64_t)r * rb, X + t * cols, cols);
    return HC_OK;
}

static hc_status ex_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                int64_t cols, hc_ref x, int64_t n, hc_ref idx, int64_t n_idx,
                                hc_ref y)
{
    const unsigned char *W;
    const float *X;
    float *Y;
    const int32_t *I;
    uint64_t rb;
    hc_status st =
        check_args(s, "matvec_rows", wtype, w, rows, cols, x, cols, n, y, rows, &W, &rb, &X, &Y);
    if (st == HC_OK)
        st = check_rows(s, "matvec_rows", idx, n_idx, rows, &I);
    if (st != HC_OK)
        return st;
    for (int64_t t = 0; t < n; t++)
        for (int64_t k = 0; k < n_idx; k++) /* rows not listed stay untouched */
            Y[t * rows + I[k]] = dot_row(wtype, W + (uint64_t)I[k] * rb, X + t * cols, cols);
    return HC_OK;
}

static hc_status ex_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                              hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    const unsigned char *Wt;
    const float *H;
    float *Y;
    const int32_t *I;
    uint64_t rb;
    hc_status st =
        check_args(s, "axpy_rows", wtype, wt, rows, cols, h, rows, n, y, cols, &Wt, &rb, &H, &Y);
    if (st == HC_OK)
        st = check_rows(s, "axpy_rows", idx, n_idx, rows, &I);
    if (st != HC_OK)
        return st;
    for (int64_t t = 0; t < n; t++)
        for (int64_t c = 0; c < cols; c++) {
            double acc = 0.0; /* summed in list order, as the ABI asks */
            for (int64_t k = 0; k < n_idx; k++)
                acc += (double)H[t * rows + I[k]] * weight_at(wtype, Wt + (uint64_t)I[k] * rb, c);
            Y[t * cols + c] += (float)acc;
        }
    return HC_OK;
}

/* ---- the table and the one exported symbol -------------------------------- */

static const hc_plugin_ops example_ops = {
    .size = sizeof(hc_plugin_ops),
    .abi_major = HC_PLUGIN_ABI_MAJOR,
    .abi_minor = HC_PLUGIN_ABI_MINOR,
    .family = "example",
    .variant = "",
    .version = "1.0",
    .probe = ex_probe,
    .init = ex_init,
    .shutdown = ex_shutdown,
    .last_error = ex_last_error,
    .device_count = ex_device_count,
    .device_info = ex_device_info,
    .device_open = ex_device_open,
    .device_close = ex_device_close,
    .buffer_alloc = ex_buffer_alloc,
    .buffer_free = ex_buffer_free,
    .buffer_host_ptr = ex_buffer_host_ptr,
    .stream_create = ex_stream_create,
    .stream_destroy = ex_stream_destroy,
    .stream_sync = ex_stream_sync,
    .upload = ex_upload,
    .download = ex_download,
    .matmul = ex_matmul,
    .matvec_rows = ex_matvec_rows,
    .axpy_rows = ex_axpy_rows,
    /* every other entry: NULL = unsupported, the core falls back */
};

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor);

HC_PLUGIN_EXPORT const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor; /* a newer core only appends entries: our table still fits */
    return abi_major == HC_PLUGIN_ABI_MAJOR ? &example_ops : NULL;
}
