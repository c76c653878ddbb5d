/*
 * The layer ops: rmsnorm, rope, attention and the element-wise unary,
 * binary and glu, so that a whole transformer layer stays on the device.
 * This file checks the arguments, splits the work where a device limit
 * requires it and records the dispatches; the arithmetic is in
 * shaders/rmsnorm.comp, rope.comp, attention.comp and eltwise.comp.
 *
 * Aliasing: an output may be exactly one of the inputs (the core adds,
 * gates and shifts in place: x += o, g = act(g, u)); every kernel reads an
 * element and writes it from the same invocation.  A partial overlap would
 * race and is refused.
 *
 * Splits (limits read from the device): one descriptor range covers at
 * most maxStorageBufferRange bytes, so element-wise ops run in chunks of
 * elements and the others in chunks of tokens (each result is computed the
 * same way either way).  Attention also splits the KV cache into ranges of
 * positions, one dispatch each, keeping the softmax state between them in
 * a scratch buffer of the stream (see attention.comp).  The KV cache's
 * length is not an argument: everything from k (v) to the end of its
 * buffer is bound, and a position outside it gives nan.
 */
#include <math.h>
#include <stdio.h>

#include "vk_plugin.h"

typedef long long ll;
typedef unsigned long long ull;

static hc_ref ref_at(hc_ref r, uint64_t off)
{
    return (hc_ref){r.buf, r.off + off};
}

/* An output either is exactly the input (in place) or shares no byte with it. */
static hc_status check_alias(hc_device *dev, const char *op, const char *y_name, hc_ref y,
                             uint64_t ny, const char *x_name, hc_ref x, uint64_t nx)
{
    if (y.buf == x.buf && y.off == x.off && ny == nx)
        return HC_OK;
    return hc_vk_check_disjoint(dev, op, y_name, y, ny, x_name, x, nx);
}

/* Records one dispatch of a layer kernel over `groups` workgroups.  Ranges
 * the kernel does not use repeat ones it does (every descriptor must be
 * valid). */
hc_status hc_vk_record_layer(hc_stream *s, const char *op, int kop, hc_vk_dispatch *d,
                            hc_vk_layer_params *p, uint64_t groups)
{
    hc_device *dev = s->dev;
    hc_status st;

    d->kernel = hc_vk_kernel_find(dev, kop, HC_VK_NO_WTYPE);
    if (d->kernel < 0)
        return hc_vk_fail(dev->ctx, HC_E_INTERNAL, "%s: no kernel variant for this device", op);
    if (!d->b.buf)
        d->b = d->a;
    if (!d->c.buf)
        d->c = d->a;
    if (!d->d.buf)
        d->d = d->a;
    if (!d->w[0].buf)
        d->w[0] = d->a;
    for (int i = 1; i < HC_VK_WINDOWS; i++)
        if (!d->w[i].buf)
            d->w[i] = d->w[0];
    d->tile = 1;
    if ((st = hc_vk_grid(dev, op, groups, &d->groups_x, &d->groups_y)) != HC_OK)
        return st;
    p->groups_x = d->groups_x;
    d->push = p;
    d->push_bytes = sizeof *p;
    return hc_vk_record_dispatch(s, op, d);
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* ---- element-wise --------------------------------------------------------- */

/* One element-wise call: a (and b, if not NULL) in, y out, n elements. */
static hc_status eltwise(hc_stream *s, const char *op, int kop, int code, int n_codes, hc_ref a,
                         const hc_ref *b, hc_ref y, int64_t n, float param)
{
    hc_device *dev;
    uint64_t na, nb = 0, ny;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK)
        return st;
    if (code < 0 || code >= n_codes)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: unknown op %d", op, code);
    if (n < 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: negative n %lld", op, (ll)n);
    if ((st = hc_vk_check_ref_n(dev, op, "x", a, n, 1, 4, &na)) != HC_OK ||
        (b && (st = hc_vk_check_ref_n(dev, op, "b", *b, n, 1, 4, &nb)) != HC_OK) ||
        (st = hc_vk_check_ref_n(dev, op, "y", y, n, 1, 4, &ny)) != HC_OK ||
        (st = check_alias(dev, op, "y", y, ny, "x", a, na)) != HC_OK ||
        (b && (st = check_alias(dev, op, "y", y, ny, "b", *b, nb)) != HC_OK))
        return st;
    uint64_t per = hc_vk_usable_window(dev) / 4, wg = hc_vk_kernel_wg(dev, kop);
    for (uint64_t i0 = 0; i0 < (uint64_t)n; i0 += per) {
        uint64_t tn = (uint64_t)n - i0 < per ? (uint64_t)n - i0 : per;
        hc_vk_dispatch d = {0};
        hc_vk_layer_params p = {0};
        if ((st = hc_vk_range_of(dev, op, "x", ref_at(a, i0 * 4), tn * 4, 4, &d.a, &p.a_off)) !=
                HC_OK ||
            (b && (st = hc_vk_range_of(dev, op, "b", ref_at(*b, i0 * 4), tn * 4, 4, &d.b,
                                       &p.b_off)) != HC_OK) ||
            (st = hc_vk_range_of(dev, op, "y", ref_at(y, i0 * 4), tn * 4, 4, &d.c, &p.c_off)) !=
                HC_OK)
            return st;
        p.n = (uint32_t)tn;
        p.op = (uint32_t)code;
        p.f0 = param;
        if ((st = hc_vk_record_layer(s, op, kop, &d, &p, ceil_div(tn, wg))) != HC_OK)
            return st;
    }
    return HC_OK;
}

hc_status hc_vk_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    return eltwise(s, "unary", HC_VK_OP_UNARY, op, 3, x, NULL, y, n, param);
}

hc_status hc_vk_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    return eltwise(s, "binary", HC_VK_OP_BINARY, op, 2, a, &b, y, n, 0.0f);
}

hc_status hc_vk_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift)
{
    return eltwise(s, "glu", HC_VK_OP_GLU, act, 3, g, &u, h, n, shift);
}

/* ---- rmsnorm -------------------------------------------------------------- */

hc_status hc_vk_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                        float eps)
{
    static const char op[] = "rmsnorm";
    hc_device *dev;
    uint64_t nx, nw, ny;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK)
        return st;
    if (n < 0 || dim < 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: negative n %lld or dim %lld", op, (ll)n,
                          (ll)dim);
    if ((st = hc_vk_check_ref_n(dev, op, "x", x, n, dim, 4, &nx)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "w", w, dim, 1, 4, &nw)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "y", y, n, dim, 4, &ny)) != HC_OK ||
        (st = check_alias(dev, op, "y", y, ny, "x", x, nx)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "y", y, ny, "w", w, nw)) != HC_OK)
        return st;
    if (n == 0 || dim == 0)
        return HC_OK;
    uint64_t row = (uint64_t)dim * 4, win = hc_vk_usable_window(dev);
    if (row > win)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED, "%s: a row of %lld exceeds one binding",
                          op, (ll)dim);
    uint64_t tpc = win / row;
    for (uint64_t t0 = 0; t0 < (uint64_t)n; t0 += tpc) {
        uint64_t tn = (uint64_t)n - t0 < tpc ? (uint64_t)n - t0 : tpc;
        hc_vk_dispatch d = {0};
        hc_vk_layer_params p = {0};
        if ((st = hc_vk_range_of(dev, op, "x", ref_at(x, t0 * row), tn * row, 4, &d.a,
                                 &p.a_off)) != HC_OK ||
            (st = hc_vk_range_of(dev, op, "w", w, row, 4, &d.b, &p.b_off)) != HC_OK ||
            (st = hc_vk_range_of(dev, op, "y", ref_at(y, t0 * row), tn * row, 4, &d.c,
                                 &p.c_off)) != HC_OK)
            return st;
        p.n = (uint32_t)tn;
        p.dim = (uint32_t)dim;
        p.f0 = eps;
        if ((st = hc_vk_record_layer(s, op, HC_VK_OP_RMSNORM, &d, &p, tn)) != HC_OK)
            return st;
    }
    return HC_OK;
}

/* ---- rope ----------------------------------------------------------------- */

hc_status hc_vk_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                     int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    static const char op[] = "rope";
    hc_device *dev;
    uint64_t width, nx, np;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_head < 0 || head_dim < 0 || n_rot < 0 || n_rot > head_dim)
        return hc_vk_fail(dev->ctx, HC_E_INVALID,
                          "%s: bad shape: n_tok %lld, n_head %lld, head_dim %lld, n_rot %lld", op,
                          (ll)n_tok, (ll)n_head, (ll)head_dim, (ll)n_rot);
    if (mode != HC_ROPE_NORM && mode != HC_ROPE_NEOX)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: unknown mode %d", op, mode);
    if (!(freq_base > 0.0f) || !isfinite(freq_base) || !isfinite(freq_scale))
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: freq_base %g, freq_scale %g", op,
                          (double)freq_base, (double)freq_scale);
    if (!hc_kit_mul3((uint64_t)n_head, (uint64_t)head_dim, 1, &width) || width > INT64_MAX / 4)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: %lld heads of %lld overflow", op,
                          (ll)n_head, (ll)head_dim);
    if ((st = hc_vk_check_ref_n(dev, op, "x", x, n_tok, (int64_t)width, 4, &nx)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "pos", pos, n_tok, 1, 4, &np)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "x", x, nx, "pos", pos, np)) != HC_OK)
        return st;
    if (n_tok == 0 || n_head == 0 || n_rot == 0)
        return HC_OK;
    uint64_t tok = width * 4, win = hc_vk_usable_window(dev);
    if (tok > win)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "%s: a token of %llu bytes exceeds one binding", op, (ull)tok);
    uint64_t tpc = win / tok, wg = hc_vk_kernel_wg(dev, HC_VK_OP_ROPE);
    /* In double on the host: the shader's frequency is then a single exp2. */
    float log2_base = (float)log2((double)freq_base);
    for (uint64_t t0 = 0; t0 < (uint64_t)n_tok; t0 += tpc) {
        uint64_t tn = (uint64_t)n_tok - t0 < tpc ? (uint64_t)n_tok - t0 : tpc;
        hc_vk_dispatch d = {0};
        hc_vk_layer_params p = {0};
        if ((st = hc_vk_range_of(dev, op, "x", ref_at(x, t0 * tok), tn * tok, 4, &d.a,
                                 &p.a_off)) != HC_OK ||
            (st = hc_vk_range_of(dev, op, "pos", ref_at(pos, t0 * 4), tn * 4, 4, &d.w[0],
                                 &p.w0_off)) != HC_OK)
            return st;
        p.n = (uint32_t)tn;
        p.dim = (uint32_t)head_dim;
        p.op = (uint32_t)mode;
        p.n_head = (uint32_t)n_head;
        p.n_rot = (uint32_t)n_rot;
        p.f0 = log2_base;
        p.f1 = freq_scale;
        if ((st = hc_vk_record_layer(s, op, HC_VK_OP_ROPE, &d, &p,
                         ceil_div(tn * (uint64_t)n_head * (uint64_t)(n_rot / 2), wg))) != HC_OK)
            return st;
    }
    return HC_OK;
}

/* ---- attention ------------------------------------------------------------ */

int64_t hc_vk_attention_max_head_dim(const hc_device *dev)
{
    return (int64_t)hc_vk_kernel_wg(dev, HC_VK_OP_ATTENTION) * HC_VK_ATT_DPI;
}

/* Whole KV rows of `row` bytes from r to the end of its buffer. */
static uint64_t rows_to_end(hc_ref r, uint64_t row)
{
    return (r.buf->size - r.off) / row;
}

hc_status hc_vk_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                          hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                          float scale)
{
    static const char op[] = "attention";
    hc_device *dev;
    uint64_t width, kv_width, nq, no, np;
    hc_buffer *scratch = NULL;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_head < 1 || n_head_kv < 1 || n_head % n_head_kv || head_dim < 1)
        return hc_vk_fail(dev->ctx, HC_E_INVALID,
                          "%s: bad shape: n_tok %lld, heads %lld/%lld, head_dim %lld", op,
                          (ll)n_tok, (ll)n_head, (ll)n_head_kv, (ll)head_dim);
    if (!hc_kit_mul3((uint64_t)n_head, (uint64_t)head_dim, 4, &width) || width > INT64_MAX)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: %lld heads of %lld overflow", op,
                          (ll)n_head, (ll)head_dim);
    width /= 4;
    kv_width = (uint64_t)n_head_kv * (uint64_t)head_dim;
    if ((st = hc_vk_check_ref_n(dev, op, "q", q, n_tok, (int64_t)width, 4, &nq)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "out", out, n_tok, (int64_t)width, 4, &no)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "pos", pos, n_tok, 1, 4, &np)) != HC_OK ||
        (st = hc_vk_check_ref(dev, op, "k", k, 0, 4)) != HC_OK ||
        (st = hc_vk_check_ref(dev, op, "v", v, 0, 4)) != HC_OK)
        return st;
    uint64_t kv_row = kv_width * 4;
    uint64_t kv_rows = rows_to_end(k, kv_row), v_rows = rows_to_end(v, kv_row);
    if (v_rows < kv_rows)
        kv_rows = v_rows;
    if (kv_rows > INT32_MAX) /* positions are int32 */
        kv_rows = INT32_MAX;
    if ((st = hc_vk_check_disjoint(dev, op, "out", out, no, "q", q, nq)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "out", out, no, "pos", pos, np)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "out", out, no, "k", k, kv_rows * kv_row)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "out", out, no, "v", v, kv_rows * kv_row)) != HC_OK)
        return st;
    if (n_tok == 0)
        return HC_OK;
    uint64_t win = hc_vk_usable_window(dev), tok = width * 4;
    if (head_dim > hc_vk_attention_max_head_dim(dev) || tok > win || kv_row > win)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "%s: head_dim %lld (at most %lld here) or %lld heads exceed a binding",
                          op, (ll)head_dim, (ll)hc_vk_attention_max_head_dim(dev), (ll)n_head);
    uint64_t per_chunk = win / kv_row;
    uint64_t n_chunks = kv_rows ? ceil_div(kv_rows, per_chunk) : 1;
    uint64_t tpc = win / tok;
    if (n_chunks > 1) {
        /* The running maximum and sum: 2 floats per (token, head). */
        uint64_t state = (uint64_t)n_head * 8;
        if (win / state < tpc)
            tpc = win / state;
        if ((uint64_t)n_tok < tpc)
            tpc = (uint64_t)n_tok;
        if ((st = hc_vk_stream_scratch(s, op, tpc * state, &scratch)) != HC_OK)
            return st;
    }
    for (uint64_t t0 = 0; t0 < (uint64_t)n_tok; t0 += tpc) {
        uint64_t tn = (uint64_t)n_tok - t0 < tpc ? (uint64_t)n_tok - t0 : tpc;
        for (uint64_t c = 0; c < n_chunks; c++) {
            uint64_t lo = c * per_chunk, hi = lo + per_chunk < kv_rows ? lo + per_chunk : kv_rows;
            hc_vk_dispatch d = {0};
            hc_vk_layer_params p = {0};
            if ((st = hc_vk_range_of(dev, op, "q", ref_at(q, t0 * tok), tn * tok, 4, &d.a,
                                     &p.a_off)) != HC_OK ||
                (st = hc_vk_range_of(dev, op, "k", ref_at(k, lo * kv_row), (hi - lo) * kv_row, 4,
                                     &d.b, &p.b_off)) != HC_OK ||
                (st = hc_vk_range_of(dev, op, "v", ref_at(v, lo * kv_row), (hi - lo) * kv_row, 4,
                                     &d.c, &p.c_off)) != HC_OK ||
                (st = hc_vk_range_of(dev, op, "out", ref_at(out, t0 * tok), tn * tok, 4, &d.d,
                                     &p.d_off)) != HC_OK ||
                (st = hc_vk_range_of(dev, op, "pos", ref_at(pos, t0 * 4), tn * 4, 4, &d.w[0],
                                     &p.w0_off)) != HC_OK ||
                (scratch && (st = hc_vk_range_of(dev, op, "scratch", (hc_ref){scratch, 0},
                                                 tn * (uint64_t)n_head * 8, 4, &d.w[1],
                                                 &p.w1_off)) != HC_OK))
                return st;
            p.n = (uint32_t)tn;
            p.dim = (uint32_t)head_dim;
            p.n_head = (uint32_t)n_head;
            p.n_head_kv = (uint32_t)n_head_kv;
            p.kv_lo = (uint32_t)lo;
            p.kv_hi = (uint32_t)hi;
            p.kv_total = (uint32_t)kv_rows;
            p.flags = (c == 0 ? 1u : 0u) | (c + 1 == n_chunks ? 2u : 0u);
            p.f0 = scale;
            if ((st = hc_vk_record_layer(s, op, HC_VK_OP_ATTENTION, &d, &p, tn * (uint64_t)n_head)) != HC_OK)
                return st;
        }
    }
    return HC_OK;
}
