/*
 * The one default for an op a plugin lacks, refuses for a call
 * (HC_E_UNSUPPORTED) or has disabled: run it on the host device (the CPU
 * plugin) and move the operands.
 *
 * Each argument is staged into a host-device scratch buffer: inputs are
 * downloaded from the device, the op runs on the host device, outputs are
 * uploaded back.  Arguments that name the same place (in-place ops such as
 * x += o) share one staging slot, so aliasing means the same as on the
 * device.  The sparse weight ops move only what the list reads: its rows of
 * the weight, packed in list order, with the list renumbered 0..n_idx-1
 * (matvec_rows and axpy_rows then give the bits they give on the full
 * operands: each row's dot, and the list-order sum, are the same
 * operations on the same numbers).  Everything is synchronous: a fallback
 * is a correctness path, and its cost shows up in `fallback_calls` and in
 * the run's figures.
 */
#include <string.h>

#include "exec/device.h"
#include "hotcold/plugin_kit.h"
#include "util/clock.h"
#include "util/log.h"

#define N_SLOTS HC_DEV_FB_SLOTS

typedef struct stage {
    hc_ref dev;      /* the argument on d */
    uint64_t bytes;
    int in, out;     /* read by the op / written by it */
    int same_as;     /* index of an earlier argument naming the same place, or -1 */
    hc_ref host;     /* its staging place on d->host */
    void *ptr;       /* host address of that */
} stage;

static int ensure_slot(hc_dev *d, int slot, uint64_t bytes)
{
    hc_dev *h = d->host;
    if (d->fb_buf[slot] && d->fb_bytes[slot] >= bytes)
        return 0;
    hc_dev_free(h, d->fb_buf[slot]);
    d->fb_buf[slot] = NULL;
    d->fb_bytes[slot] = 0;
    if (hc_dev_alloc(h, bytes, &d->fb_buf[slot]))
        return -1;
    d->fb_bytes[slot] = bytes;
    return 0;
}

void hc_dev_fallback_free(hc_dev *d)
{
    for (int i = 0; i < N_SLOTS; i++) {
        if (d->fb_buf[i] && d->host)
            hc_dev_free(d->host, d->fb_buf[i]);
        d->fb_buf[i] = NULL;
        d->fb_bytes[i] = 0;
    }
}

/* A fallback of `op` starts: there must be a host device to run it, and
 * the call counts. */
static int fallback_begin(hc_dev *d, const char *op)
{
    if (!d->host || !HC_DEV_HAS(d->host, buffer_host_ptr)) {
        hc_set_error("%s: plugin '%s' does not implement %s and no CPU device is open to run it",
                     d->label, d->plugin->family, op);
        return -1;
    }
    d->fallback_calls++;
    return 0;
}

/* Give every argument a host place and bring the inputs over. */
static int stage_in(hc_dev *d, const char *op, stage *s, int n)
{
    if (fallback_begin(d, op))
        return -1;
    for (int i = 0; i < n; i++) {
        s[i].same_as = -1;
        for (int j = 0; j < i; j++)
            if (s[j].dev.buf == s[i].dev.buf && s[j].dev.off == s[i].dev.off)
                s[i].same_as = j;
        if (s[i].same_as >= 0) {
            stage *o = &s[s[i].same_as];
            if (s[i].bytes > o->bytes)
                o->bytes = s[i].bytes;
            o->in |= s[i].in;
            o->out |= s[i].out;
        }
    }
    for (int i = 0; i < n; i++) {
        if (s[i].same_as >= 0)
            continue;
        if (ensure_slot(d, i, s[i].bytes ? s[i].bytes : 4))
            return -1;
        s[i].host = (hc_ref){d->fb_buf[i], 0};
        s[i].ptr = d->host->ops->buffer_host_ptr(d->fb_buf[i]);
        if (!s[i].ptr) {
            hc_set_error("%s: the CPU device gave no host address for a %s fallback buffer",
                         d->label, op);
            return -1;
        }
        if (s[i].in && s[i].bytes && hc_dev_download(d, s[i].ptr, s[i].dev, s[i].bytes))
            return -1;
    }
    for (int i = 0; i < n; i++)
        if (s[i].same_as >= 0)
            s[i].host = s[s[i].same_as].host;
    return hc_dev_sync(d);
}

/* Wait for the host op, then send the outputs back. */
static int stage_out(hc_dev *d, stage *s, int n)
{
    if (hc_dev_sync(d->host))
        return -1;
    for (int i = 0; i < n; i++)
        if (s[i].same_as < 0 && s[i].out && s[i].bytes &&
            hc_dev_upload(d, s[i].dev, s[i].ptr, s[i].bytes))
            return -1;
    /* The staging memory is reused by the next fallback: the uploads must
     * have read it before this returns. */
    return hc_dev_sync(d);
}

#define F32 ((uint64_t)sizeof(float))

/* Host-device scratch slot `slot` with room for `bytes`: its ref and host
 * address. */
static int host_place(hc_dev *d, int slot, uint64_t bytes, hc_ref *ref, void **ptr)
{
    if (ensure_slot(d, slot, bytes ? bytes : 4))
        return -1;
    *ref = (hc_ref){d->fb_buf[slot], 0};
    *ptr = d->host->ops->buffer_host_ptr(d->fb_buf[slot]);
    if (!*ptr) {
        hc_set_error("%s: the CPU device gave no host address for a fallback buffer", d->label);
        return -1;
    }
    return 0;
}

/* a * b * c bytes, or -1 with the error set when the shape is negative or
 * the product overflows. */
static int shape_bytes(const hc_dev *d, const char *op, int64_t a, int64_t b, uint64_t c,
                       uint64_t *out)
{
    uint64_t ab;
    if (a < 0 || b < 0 || __builtin_mul_overflow((uint64_t)a, (uint64_t)b, &ab) ||
        __builtin_mul_overflow(ab, c, out)) {
        hc_set_error("%s: %s fallback: bad shape %lld x %lld x %llu", d->label, op, (long long)a,
                     (long long)b, (unsigned long long)c);
        return -1;
    }
    return 0;
}

/* The operands a sparse weight op reads, on the host device: its list (in
 * idx, the original, and in seq as 0..n_idx-1) and its listed weight rows
 * packed in list order (wp).  Runs of consecutive rows come down in one
 * transfer each. */
typedef struct sparse_stage {
    uint64_t row_bytes;
    const int32_t *idx;
    hc_ref seq, wp;
} sparse_stage;

enum { SLOT_IDX, SLOT_SEQ, SLOT_W, SLOT_A, SLOT_B, SLOT_C }; /* SLOT_C < N_SLOTS */

static int stage_sparse(hc_dev *d, const char *op, hc_type t, hc_ref w, int64_t rows,
                        int64_t cols, hc_ref idx, int64_t n_idx, sparse_stage *ss)
{
    void *ip, *sp, *wp;
    hc_ref ir;
    uint64_t ib, wb;
    ss->row_bytes = hc_type_row_size(t, cols);
    if (rows < 0 || (ss->row_bytes == 0 && cols != 0)) {
        hc_set_error("%s: %s fallback: weight type %d with %lld x %lld is no weight shape",
                     d->label, op, (int)t, (long long)rows, (long long)cols);
        return -1;
    }
    if (shape_bytes(d, op, n_idx, 1, sizeof(int32_t), &ib) ||
        shape_bytes(d, op, n_idx, 1, ss->row_bytes, &wb) ||
        host_place(d, SLOT_IDX, ib, &ir, &ip) || host_place(d, SLOT_SEQ, ib, &ss->seq, &sp) ||
        host_place(d, SLOT_W, wb, &ss->wp, &wp))
        return -1;
    if (ib && (hc_dev_download(d, ip, idx, ib) || hc_dev_sync(d)))
        return -1;
    const int32_t *list = ip;
    for (int64_t k = 0; k < n_idx; k++) {
        if (list[k] < 0 || list[k] >= rows) {
            hc_set_error("%s: %s fallback: idx[%lld] = %d is outside [0, %lld)", d->label, op,
                         (long long)k, (int)list[k], (long long)rows);
            return -1;
        }
        ((int32_t *)sp)[k] = (int32_t)k;
    }
    for (int64_t k = 0, run; k < n_idx; k += run) {
        for (run = 1; k + run < n_idx && list[k + run] == list[k] + run; run++)
            ;
        if (hc_dev_download(d, (uint8_t *)wp + (uint64_t)k * ss->row_bytes,
                            hc_ref_at(w, (uint64_t)list[k] * ss->row_bytes),
                            (uint64_t)run * ss->row_bytes))
            return -1;
    }
    ss->idx = list;
    return hc_dev_sync(d);
}

int hc_dev_fallback_matmul(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                           int64_t n, hc_ref y)
{
    uint64_t wb, xb, yb;
    if (shape_bytes(d, "matmul", rows, 1, hc_type_row_size(t, cols), &wb) ||
        shape_bytes(d, "matmul", n, cols, F32, &xb) || shape_bytes(d, "matmul", n, rows, F32, &yb))
        return -1;
    stage s[3] = {{.dev = w, .bytes = wb, .in = 1},
                  {.dev = x, .bytes = xb, .in = 1},
                  {.dev = y, .bytes = yb, .out = 1}};
    if (stage_in(d, "matmul", s, 3) ||
        hc_dev_matmul(d->host, t, s[0].host, rows, cols, s[1].host, n, s[2].host))
        return -1;
    return stage_out(d, s, 3);
}

/* The listed rows computed on the host into a packed n x n_idx y, then put
 * in their places of the device's y (its other rows come back as they
 * were). */
int hc_dev_fallback_matvec_rows(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols,
                                hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    sparse_stage ss;
    hc_ref xr, ypr, yr;
    void *xp, *ypp, *yp;
    uint64_t xb, ypb, yb;
    if (fallback_begin(d, "matvec_rows") || shape_bytes(d, "matvec_rows", n, cols, F32, &xb) ||
        shape_bytes(d, "matvec_rows", n, n_idx, F32, &ypb) ||
        shape_bytes(d, "matvec_rows", n, rows, F32, &yb))
        return -1;
    if (n_idx == 0 || n == 0)
        return 0; /* no row to compute */
    if (stage_sparse(d, "matvec_rows", t, w, rows, cols, idx, n_idx, &ss) ||
        host_place(d, SLOT_A, xb, &xr, &xp) || host_place(d, SLOT_B, ypb, &ypr, &ypp) ||
        host_place(d, SLOT_C, yb, &yr, &yp) || hc_dev_download(d, xp, x, xb) ||
        hc_dev_download(d, yp, y, yb) || hc_dev_sync(d))
        return -1;
    if (hc_dev_matvec_rows(d->host, t, ss.wp, n_idx, cols, xr, n, ss.seq, n_idx, ypr) ||
        hc_dev_sync(d->host))
        return -1;
    const float *packed = ypp;
    float *full = yp;
    for (int64_t tok = 0; tok < n; tok++)
        for (int64_t k = 0; k < n_idx; k++)
            full[tok * rows + ss.idx[k]] = packed[tok * n_idx + k];
    /* The staging memory is reused by the next fallback: the upload must
     * have read it before this returns. */
    if (hc_dev_upload(d, y, yp, yb))
        return -1;
    return hc_dev_sync(d);
}

/* h's listed entries packed the same way (h[t][idx[k]] -> hp[t][k]); y
 * comes down whole, gains the sum on the host and goes back. */
int hc_dev_fallback_axpy_rows(hc_dev *d, hc_type t, hc_ref wt, int64_t rows, int64_t cols,
                              hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    sparse_stage ss;
    hc_ref hr, hpr, yr;
    void *hp, *hpp, *yp;
    uint64_t hb, hpb, yb;
    if (fallback_begin(d, "axpy_rows") || shape_bytes(d, "axpy_rows", n, rows, F32, &hb) ||
        shape_bytes(d, "axpy_rows", n, n_idx, F32, &hpb) ||
        shape_bytes(d, "axpy_rows", n, cols, F32, &yb))
        return -1;
    if (n_idx == 0 || n == 0)
        return 0; /* nothing to add */
    if (stage_sparse(d, "axpy_rows", t, wt, rows, cols, idx, n_idx, &ss) ||
        host_place(d, SLOT_A, hb, &hr, &hp) || host_place(d, SLOT_B, hpb, &hpr, &hpp) ||
        host_place(d, SLOT_C, yb, &yr, &yp) || hc_dev_download(d, hp, h, hb) ||
        hc_dev_download(d, yp, y, yb) || hc_dev_sync(d))
        return -1;
    const float *full = hp;
    float *packed = hpp;
    for (int64_t tok = 0; tok < n; tok++)
        for (int64_t k = 0; k < n_idx; k++)
            packed[tok * n_idx + k] = full[tok * rows + ss.idx[k]];
    if (hc_dev_axpy_rows(d->host, t, ss.wp, n_idx, cols, hpr, n, ss.seq, n_idx, yr) ||
        hc_dev_sync(d->host))
        return -1;
    if (hc_dev_upload(d, y, yp, yb))
        return -1;
    return hc_dev_sync(d);
}

int hc_dev_fallback_rmsnorm(hc_dev *d, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                            float eps)
{
    const uint64_t v = (uint64_t)n * (uint64_t)dim * F32;
    stage s[3] = {{.dev = x, .bytes = v, .in = 1},
                  {.dev = w, .bytes = (uint64_t)dim * F32, .in = 1},
                  {.dev = y, .bytes = v, .out = 1}};
    if (stage_in(d, "rmsnorm", s, 3) ||
        hc_dev_rmsnorm(d->host, s[0].host, s[1].host, s[2].host, n, dim, eps))
        return -1;
    return stage_out(d, s, 3);
}

int hc_dev_fallback_rope(hc_dev *d, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                         int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    stage s[2] = {{.dev = x, .bytes = (uint64_t)(n_tok * n_head * head_dim) * F32, .in = 1, .out = 1},
                  {.dev = pos, .bytes = (uint64_t)n_tok * sizeof(int32_t), .in = 1}};
    if (stage_in(d, "rope", s, 2) ||
        hc_dev_rope(d->host, s[0].host, n_tok, n_head, head_dim, n_rot, s[1].host, freq_base,
                    freq_scale, mode))
        return -1;
    return stage_out(d, s, 2);
}

/* The KV cache is read up to the largest position of the batch, so the
 * positions come over first. */
int hc_dev_fallback_attention(hc_dev *d, hc_ref q, hc_ref k, hc_ref v, hc_ref out,
                              int64_t n_tok, hc_ref pos, int64_t n_head, int64_t n_head_kv,
                              int64_t head_dim, float scale)
{
    const uint64_t qb = (uint64_t)(n_tok * n_head * head_dim) * F32;
    stage p[1] = {{.dev = pos, .bytes = (uint64_t)n_tok * sizeof(int32_t), .in = 1}};
    if (stage_in(d, "attention", p, 1))
        return -1;
    /* stage_in counted one call; the second staging below is the same call. */
    d->fallback_calls--;
    int32_t max_pos = 0;
    for (int64_t t = 0; t < n_tok; t++) {
        int32_t ps = ((const int32_t *)p[0].ptr)[t];
        if (ps < 0) {
            hc_set_error("%s: attention fallback: negative position %d", d->label, (int)ps);
            return -1;
        }
        if (ps > max_pos)
            max_pos = ps;
    }
    const uint64_t kvb = (uint64_t)(max_pos + 1) * (uint64_t)(n_head_kv * head_dim) * F32;
    /* pos is staged again as slot 4 so slot 0..3 hold q, k, v, out. */
    stage s[5] = {{.dev = q, .bytes = qb, .in = 1},
                  {.dev = k, .bytes = kvb, .in = 1},
                  {.dev = v, .bytes = kvb, .in = 1},
                  {.dev = out, .bytes = qb, .out = 1},
                  {.dev = pos, .bytes = (uint64_t)n_tok * sizeof(int32_t), .in = 1}};
    if (stage_in(d, "attention", s, 5) ||
        hc_dev_attention(d->host, s[0].host, s[1].host, s[2].host, s[3].host, n_tok, s[4].host,
                         n_head, n_head_kv, head_dim, scale))
        return -1;
    return stage_out(d, s, 5);
}

int hc_dev_fallback_unary(hc_dev *d, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    const uint64_t b = (uint64_t)n * F32;
    stage s[2] = {{.dev = x, .bytes = b, .in = 1}, {.dev = y, .bytes = b, .out = 1}};
    if (stage_in(d, "unary", s, 2) || hc_dev_unary(d->host, op, s[0].host, s[1].host, n, param))
        return -1;
    return stage_out(d, s, 2);
}

int hc_dev_fallback_binary(hc_dev *d, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    const uint64_t sz = (uint64_t)n * F32;
    stage s[3] = {{.dev = a, .bytes = sz, .in = 1},
                  {.dev = b, .bytes = sz, .in = 1},
                  {.dev = y, .bytes = sz, .out = 1}};
    if (stage_in(d, "binary", s, 3) ||
        hc_dev_binary(d->host, op, s[0].host, s[1].host, s[2].host, n))
        return -1;
    return stage_out(d, s, 3);
}

int hc_dev_fallback_glu(hc_dev *d, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n,
                        float shift)
{
    const uint64_t sz = (uint64_t)n * F32;
    stage s[3] = {{.dev = g, .bytes = sz, .in = 1},
                  {.dev = u, .bytes = sz, .in = 1},
                  {.dev = h, .bytes = sz, .out = 1}};
    if (stage_in(d, "glu", s, 3) ||
        hc_dev_glu(d->host, act, s[0].host, s[1].host, s[2].host, n, shift))
        return -1;
    return stage_out(d, s, 3);
}

/* The core's own selection, on the staged scores: the rule of plugin.h's
 * select_rows, row by row in ascending order. */
int hc_dev_fallback_select_rows(hc_dev *d, hc_ref scores, int64_t n_tok, int64_t n_rows,
                                float cut, hc_ref map, hc_ref idx, hc_ref count)
{
    uint64_t sb, lb;
    if (shape_bytes(d, "select_rows", n_tok, n_rows, F32, &sb) ||
        shape_bytes(d, "select_rows", n_rows, 1, sizeof(int32_t), &lb))
        return -1;
    if (n_rows > INT32_MAX) {
        hc_set_error("%s: select_rows fallback: %lld rows exceed an int32 list", d->label,
                     (long long)n_rows);
        return -1;
    }
    /* Without a map, the scores stand in for it: staged, never read. */
    stage s[4] = {{.dev = scores, .bytes = sb, .in = 1},
                  {.dev = map.buf ? map : scores, .bytes = map.buf ? lb : 0, .in = 1},
                  {.dev = idx, .bytes = lb, .in = 1, .out = 1},
                  {.dev = count, .bytes = sizeof(int32_t), .out = 1}};
    if (stage_in(d, "select_rows", s, 4))
        return -1;
    const float *sc = s[0].ptr;
    const int32_t *mp = map.buf ? s[1].ptr : NULL;
    int32_t *list = s[2].ptr, k = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        int on = 0;
        for (int64_t t = 0; t < n_tok && !on; t++)
            on = sc[t * n_rows + r] >= cut;
        const int32_t v = mp ? mp[r] : (int32_t)r;
        if (on && v >= 0)
            list[k++] = v;
    }
    *(int32_t *)s[3].ptr = k;
    return stage_out(d, s, 4);
}

int hc_dev_read_count(hc_dev *d, hc_ref count, int64_t max_idx, int64_t *out)
{
    int32_t k = 0;
    if (hc_dev_download(d, &k, count, sizeof k) || hc_dev_sync(d))
        return -1;
    *out = k < 0 ? 0 : k > max_idx ? max_idx : k;
    return 0;
}

/* The positions come over, then each row goes up to its place from the
 * staged source. */
int hc_dev_fallback_scatter_rows(hc_dev *d, hc_ref src, hc_ref dst, uint64_t row_bytes,
                                 int64_t n, hc_ref pos, int64_t dst_rows)
{
    uint64_t sb;
    if (shape_bytes(d, "scatter_rows", n, 1, row_bytes, &sb))
        return -1;
    stage s[2] = {{.dev = src, .bytes = sb, .in = 1},
                  {.dev = pos, .bytes = (uint64_t)n * sizeof(int32_t), .in = 1}};
    if (stage_in(d, "scatter_rows", s, 2))
        return -1;
    const int32_t *p = s[1].ptr;
    for (int64_t t = 0; t < n; t++)
        if (p[t] >= 0 && p[t] < dst_rows &&
            hc_dev_upload(d, hc_ref_at(dst, (uint64_t)p[t] * row_bytes),
                          (const uint8_t *)s[0].ptr + (uint64_t)t * row_bytes, row_bytes))
            return -1;
    /* The staging memory is reused by the next fallback. */
    return hc_dev_sync(d);
}

/* The default events (ABI 1.4 absent): a plugin without them is waited for
 * whole, which on its in-order stream is the same point; the host's clock
 * stands in for the device's (hc_dev_event_ms: host time, which counts the
 * host's waits and the time before the device starts). */
int hc_dev_fallback_event_record(hc_dev *d, hc_dev_event *e)
{
    (void)d;
    e->host_s = hc_time_s();
    return 0;
}

int hc_dev_fallback_event_sync(hc_dev *d, hc_dev_event *e)
{
    hc_status st = d->ops->stream_sync(d->stream);
    if (st != HC_OK) {
        d->last_status = st;
        hc_set_error("%s: stream_sync failed: %s: %s", d->label, hc_kit_status_name(st),
                     d->ops->last_error(d->plugin->ctx));
        return -1;
    }
    e->host_s = hc_time_s();
    return 0;
}
