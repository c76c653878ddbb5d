/*
 * Capture (ABI 1.3): the ops issued on a stream between capture_begin and
 * capture_end are recorded as calls, not run, and graph_launch issues them
 * again, in order, on the stream it is given.  A recorded upload reads its
 * host memory, and a download writes it, when the graph runs (plugin.h),
 * and every argument is checked then, by the op itself.
 *
 * What a replay saves here is the host's side of a pass (the core's
 * recipe, its checks and bookkeeping), not command recording: each launch
 * records its dispatches afresh.  It makes the core's captured decode path
 * run, and be tested, on every Vulkan device (lavapipe in CI); keeping
 * recorded command buffers for replay would be the next step.
 *
 * Every stream entry of the table goes through a wrapper below that
 * records while its stream captures and otherwise calls the op.
 */
#include <stdlib.h>

#include "vk_plugin.h"

typedef enum cap_kind {
    CAP_UPLOAD,
    CAP_DOWNLOAD,
    CAP_COPY,
    CAP_MATMUL,
    CAP_MATVEC_ROWS,
    CAP_AXPY_ROWS,
    CAP_RMSNORM,
    CAP_ROPE,
    CAP_ATTENTION,
    CAP_UNARY,
    CAP_BINARY,
    CAP_GLU,
    CAP_SELECT_ROWS,
    CAP_MATVEC_ROWS_COUNTED,
    CAP_AXPY_ROWS_COUNTED,
    CAP_SCATTER_ROWS
} cap_kind;

/* One recorded call: its refs, integers and floats in argument order. */
typedef struct cap_call {
    cap_kind kind;
    hc_type t;
    hc_ref r[6];
    int64_t i[6];
    float f[2];
    const void *src;
    void *dst;
} cap_call;

struct hc_graph {
    uint32_t magic;
    cap_call *calls;
    size_t n, cap;
    int failed; /* a call could not be recorded (out of memory) */
};

#define HC_VK_MAGIC_GRAPH 0x47564b48u /* "HKVG" */

static int capturing(hc_stream *s)
{
    return s && s->magic == HC_VK_MAGIC_STREAM && s->capture;
}

/* Appends c to the stream's recording; a failure fails capture_end. */
static hc_status record(hc_stream *s, cap_call c)
{
    hc_graph *g = s->capture;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        cap_call *calls = realloc(g->calls, cap * sizeof *calls);
        if (!calls) {
            g->failed = 1;
            return hc_vk_fail(s->dev->ctx, HC_E_NOMEM, "capture: out of memory recording a call");
        }
        g->calls = calls;
        g->cap = cap;
    }
    g->calls[g->n++] = c;
    return HC_OK;
}

hc_status hc_vk_capture_begin(hc_stream *s)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    if (s->capture)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "capture_begin: the stream captures already");
    hc_graph *g = calloc(1, sizeof *g);
    if (!g)
        return hc_vk_fail(dev->ctx, HC_E_NOMEM, "capture_begin: out of memory");
    g->magic = HC_VK_MAGIC_GRAPH;
    s->capture = g;
    return HC_OK;
}

hc_status hc_vk_capture_end(hc_stream *s, hc_graph **out)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    if (!out)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "capture_end: out is NULL");
    *out = NULL;
    hc_graph *g = s->capture;
    if (!g)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "capture_end: the stream does not capture");
    s->capture = NULL;
    if (g->failed) {
        hc_vk_graph_free(g);
        return hc_vk_fail(dev->ctx, HC_E_NOMEM, "capture_end: a call could not be recorded");
    }
    *out = g;
    return HC_OK;
}

static hc_status run_call(hc_stream *s, const cap_call *c)
{
    const hc_ref *r = c->r;
    const int64_t *i = c->i;
    switch (c->kind) {
    case CAP_UPLOAD: return hc_vk_upload(s, r[0], c->src, (uint64_t)i[0]);
    case CAP_DOWNLOAD: return hc_vk_download(s, c->dst, r[0], (uint64_t)i[0]);
    case CAP_COPY: return hc_vk_copy(s, r[0], r[1], (uint64_t)i[0]);
    case CAP_MATMUL: return hc_vk_matmul(s, c->t, r[0], i[0], i[1], r[1], i[2], r[2]);
    case CAP_MATVEC_ROWS:
        return hc_vk_matvec_rows(s, c->t, r[0], i[0], i[1], r[1], i[2], r[2], i[3], r[3]);
    case CAP_AXPY_ROWS:
        return hc_vk_axpy_rows(s, c->t, r[0], i[0], i[1], r[1], i[2], r[2], i[3], r[3]);
    case CAP_RMSNORM: return hc_vk_rmsnorm(s, r[0], r[1], r[2], i[0], i[1], c->f[0]);
    case CAP_ROPE:
        return hc_vk_rope(s, r[0], i[0], i[1], i[2], i[3], r[1], c->f[0], c->f[1], (int)i[4]);
    case CAP_ATTENTION:
        return hc_vk_attention(s, r[0], r[1], r[2], r[3], i[0], r[4], i[1], i[2], i[3], c->f[0]);
    case CAP_UNARY: return hc_vk_unary(s, (int)i[0], r[0], r[1], i[1], c->f[0]);
    case CAP_BINARY: return hc_vk_binary(s, (int)i[0], r[0], r[1], r[2], i[1]);
    case CAP_GLU: return hc_vk_glu(s, (int)i[0], r[0], r[1], r[2], i[1], c->f[0]);
    case CAP_SELECT_ROWS:
        return hc_vk_select_rows(s, r[0], i[0], i[1], c->f[0], r[1], r[2], r[3]);
    case CAP_MATVEC_ROWS_COUNTED:
        return hc_vk_matvec_rows_counted(s, c->t, r[0], i[0], i[1], r[1], i[2], r[2], r[3], i[3],
                                         r[4]);
    case CAP_AXPY_ROWS_COUNTED:
        return hc_vk_axpy_rows_counted(s, c->t, r[0], i[0], i[1], r[1], i[2], r[2], r[3], i[3],
                                       r[4]);
    case CAP_SCATTER_ROWS:
        return hc_vk_scatter_rows(s, r[0], r[1], (uint64_t)i[0], i[1], r[2], i[2]);
    }
    return hc_vk_fail(s->dev->ctx, HC_E_INTERNAL, "graph_launch: unknown call %d", (int)c->kind);
}

hc_status hc_vk_graph_launch(hc_stream *s, hc_graph *g)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    if (!g || g->magic != HC_VK_MAGIC_GRAPH)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "graph_launch: not a graph of this plugin");
    if (s->capture)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "graph_launch: the stream is capturing");
    for (size_t k = 0; k < g->n; k++)
        if ((st = run_call(s, &g->calls[k])) != HC_OK)
            return st;
    return HC_OK;
}

void hc_vk_graph_free(hc_graph *g)
{
    if (!g || g->magic != HC_VK_MAGIC_GRAPH)
        return;
    g->magic = 0;
    free(g->calls);
    free(g);
}

/* ---- the wrappers the table points at -------------------------------------- */

#define REFS(...) .r = {__VA_ARGS__}
#define INTS(...) .i = {__VA_ARGS__}

hc_status hc_vk_cap_stream_sync(hc_stream *s)
{
    if (capturing(s))
        return hc_vk_fail(s->dev->ctx, HC_E_INVALID,
                          "stream_sync: the stream is capturing (nothing has run)");
    return hc_vk_stream_sync(s);
}

hc_status hc_vk_cap_stream_flush(hc_stream *s)
{
    return capturing(s) ? HC_OK : hc_vk_stream_submit(s);
}

hc_status hc_vk_cap_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_UPLOAD, 0, REFS(dst), INTS((int64_t)bytes), .src = src});
    return hc_vk_upload(s, dst, src, bytes);
}

hc_status hc_vk_cap_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_DOWNLOAD, 0, REFS(src), INTS((int64_t)bytes), .dst = dst});
    return hc_vk_download(s, dst, src, bytes);
}

hc_status hc_vk_cap_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_COPY, 0, REFS(dst, src), INTS((int64_t)bytes)});
    return hc_vk_copy(s, dst, src, bytes);
}

hc_status hc_vk_cap_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                           hc_ref x, int64_t n, hc_ref y)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_MATMUL, wtype, REFS(w, x, y), INTS(rows, cols, n)});
    return hc_vk_matmul(s, wtype, w, rows, cols, x, n, y);
}

hc_status hc_vk_cap_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                int64_t cols, hc_ref x, int64_t n, hc_ref idx, int64_t n_idx,
                                hc_ref y)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_MATVEC_ROWS, wtype, REFS(w, x, idx, y),
                                    INTS(rows, cols, n, n_idx)});
    return hc_vk_matvec_rows(s, wtype, w, rows, cols, x, n, idx, n_idx, y);
}

hc_status hc_vk_cap_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                              hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_AXPY_ROWS, wtype, REFS(wt, h, idx, y),
                                    INTS(rows, cols, n, n_idx)});
    return hc_vk_axpy_rows(s, wtype, wt, rows, cols, h, n, idx, n_idx, y);
}

hc_status hc_vk_cap_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                            float eps)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_RMSNORM, 0, REFS(x, w, y), INTS(n, dim), .f = {eps}});
    return hc_vk_rmsnorm(s, x, w, y, n, dim, eps);
}

hc_status hc_vk_cap_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                         int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_ROPE, 0, REFS(x, pos),
                                    INTS(n_tok, n_head, head_dim, n_rot, mode),
                                    .f = {freq_base, freq_scale}});
    return hc_vk_rope(s, x, n_tok, n_head, head_dim, n_rot, pos, freq_base, freq_scale, mode);
}

hc_status hc_vk_cap_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out,
                              int64_t n_tok, hc_ref pos, int64_t n_head, int64_t n_head_kv,
                              int64_t head_dim, float scale)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_ATTENTION, 0, REFS(q, k, v, out, pos),
                                    INTS(n_tok, n_head, n_head_kv, head_dim), .f = {scale}});
    return hc_vk_attention(s, q, k, v, out, n_tok, pos, n_head, n_head_kv, head_dim, scale);
}

hc_status hc_vk_cap_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_UNARY, 0, REFS(x, y), INTS(op, n), .f = {param}});
    return hc_vk_unary(s, op, x, y, n, param);
}

hc_status hc_vk_cap_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_BINARY, 0, REFS(a, b, y), INTS(op, n)});
    return hc_vk_binary(s, op, a, b, y, n);
}

hc_status hc_vk_cap_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n,
                        float shift)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_GLU, 0, REFS(g, u, h), INTS(act, n), .f = {shift}});
    return hc_vk_glu(s, act, g, u, h, n, shift);
}

hc_status hc_vk_cap_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                                float cut, hc_ref map, hc_ref idx, hc_ref count)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_SELECT_ROWS, 0, REFS(scores, map, idx, count),
                                    INTS(n_tok, n_rows), .f = {cut}});
    return hc_vk_select_rows(s, scores, n_tok, n_rows, cut, map, idx, count);
}

hc_status hc_vk_cap_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                        int64_t cols, hc_ref x, int64_t n, hc_ref idx,
                                        hc_ref count, int64_t max_idx, hc_ref y)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_MATVEC_ROWS_COUNTED, wtype, REFS(w, x, idx, count, y),
                                    INTS(rows, cols, n, max_idx)});
    return hc_vk_matvec_rows_counted(s, wtype, w, rows, cols, x, n, idx, count, max_idx, y);
}

hc_status hc_vk_cap_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                      int64_t cols, hc_ref h, int64_t n, hc_ref idx,
                                      hc_ref count, int64_t max_idx, hc_ref y)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_AXPY_ROWS_COUNTED, wtype, REFS(wt, h, idx, count, y),
                                    INTS(rows, cols, n, max_idx)});
    return hc_vk_axpy_rows_counted(s, wtype, wt, rows, cols, h, n, idx, count, max_idx, y);
}

hc_status hc_vk_cap_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes,
                                 int64_t n, hc_ref pos, int64_t dst_rows)
{
    if (capturing(s))
        return record(s, (cap_call){CAP_SCATTER_ROWS, 0, REFS(src, dst, pos),
                                    INTS((int64_t)row_bytes, n, dst_rows)});
    return hc_vk_scatter_rows(s, src, dst, row_bytes, n, pos, dst_rows);
}
