/*
 * The layer ops: rmsnorm, rope, attention and the element-wise unary,
 * binary and glu, so that a whole transformer layer stays on the GPU.  This
 * file checks the arguments (the CPU plugin's checks, plugin_kit.h's
 * messages) and queues the kernels; the arithmetic is in kernels_layer.cu
 * and kernels_attention.cu.
 *
 * Aliasing: an output may be exactly one of the inputs (the core adds,
 * gates and shifts in place); a partial overlap is refused.
 *
 * Device memory the host cannot read without a sync is not checked here:
 * rope takes any position, and attention gives nan for a token whose
 * position is negative or past the cache (the CPU plugin, which can read
 * pos, refuses a negative one).  The cache's length is not an argument:
 * attention takes the whole rows from k (v) to the end of its buffer.
 *
 * Refused with HC_E_UNSUPPORTED (nothing queued; the core runs the call on
 * the CPU): rope with n_rot > HC_CU_ROPE_MAX_ROT (its angles are kept in
 * shared memory), attention with more than INT32_MAX heads.  op_cost
 * prices both at -1.
 */
#include <stdio.h>

#include "cuda_plugin.h"

typedef long long ll;

/* Attention's split (kernels_attention.cu): slices per (token, head) so
 * that one decoded token makes about ATT_TARGET_BLOCKS blocks (~4 per SM
 * on a 132-SM card), of a multiple of ATT_SLICE_UNIT positions; at most
 * ATT_MAX_SLICES.  The choice depends on the cache's length and the head
 * count only, never on timing or the device. */
#define ATT_TARGET_BLOCKS 512
#define ATT_MAX_SLICES 64
#define ATT_SLICE_UNIT 64
/* Scratch for the partial results: tokens are taken in groups that fit. */
#define ATT_SCRATCH_BYTES ((uint64_t)32 << 20)
/* The grid's y and z dimensions. */
#define GRID_YZ_MAX 65535

static hc_status eltwise(hc_stream *s, const char *op, int kind, int code, const char *na,
                         hc_ref a, const char *nb, const hc_ref *b, const char *ny, hc_ref y,
                         int64_t n, float param)
{
    hc_device *dev;
    uint64_t bytes;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (n < 0)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: negative n %lld", op, (ll)n);
    if ((st = hc_cu_check_ref_n(dev, op, na, a, n, 1, 4, &bytes)) != HC_OK ||
        (b && (st = hc_cu_check_ref_n(dev, op, nb, *b, n, 1, 4, &bytes)) != HC_OK) ||
        (st = hc_cu_check_ref_n(dev, op, ny, y, n, 1, 4, &bytes)) != HC_OK)
        return st;
    if ((y.buf == a.buf &&
         (st = hc_kit_check_same_or_disjoint(hc_cu_kit_fail, dev->ctx, op, ny, y.off, bytes, na,
                                             a.off, bytes)) != HC_OK) ||
        (b && y.buf == b->buf &&
         (st = hc_kit_check_same_or_disjoint(hc_cu_kit_fail, dev->ctx, op, ny, y.off, bytes, nb,
                                             b->off, bytes)) != HC_OK))
        return st;
    if (n == 0)
        return HC_OK;
    int e = hc_cu_launch_eltwise(s->s, kind, code, hc_cu_addr(a), b ? hc_cu_addr(*b) : NULL,
                                 hc_cu_addr(y), n, param);
    return hc_cu_check_queued(s, (cudaError_t)e, op);
}

/* An op code outside the ABI's list is a bad argument. */
static hc_status bad_code(hc_stream *s, const char *op, const char *what, int code)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, op, &dev);
    return st != HC_OK ? st : hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: unknown %s %d", op, what, code);
}

hc_status hc_cu_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    if (op != HC_UNARY_RELU_SHIFT && op != HC_UNARY_SILU && op != HC_UNARY_SCALE)
        return bad_code(s, "unary", "op", op);
    return eltwise(s, "unary", 0, op, "x", x, NULL, NULL, "y", y, n, param);
}

hc_status hc_cu_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    if (op != HC_BINARY_ADD && op != HC_BINARY_MUL)
        return bad_code(s, "binary", "op", op);
    return eltwise(s, "binary", 1, op, "a", a, "b", &b, "y", y, n, 0.0f);
}

hc_status hc_cu_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift)
{
    if (act != HC_GLU_SILU && act != HC_GLU_RELU && act != HC_GLU_RELU_BOTH)
        return bad_code(s, "glu", "activation", act);
    return eltwise(s, "glu", 2, act, "g", g, "u", &u, "h", h, n, shift);
}

hc_status hc_cu_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                        float eps)
{
    static const char op[] = "rmsnorm";
    hc_device *dev;
    uint64_t xbytes, wbytes, ybytes;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (n < 0 || dim < 1)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "%s: bad shape n %lld, dim %lld (dim must be >= 1)", op, (ll)n, (ll)dim);
    if ((st = hc_cu_check_ref_n(dev, op, "x", x, n, dim, 4, &xbytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "w", w, dim, 1, 4, &wbytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "y", y, n, dim, 4, &ybytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "y", y, ybytes, "w", w, wbytes)) != HC_OK)
        return st;
    if (y.buf == x.buf &&
        (st = hc_kit_check_same_or_disjoint(hc_cu_kit_fail, dev->ctx, op, "y", y.off, ybytes,
                                            "x", x.off, xbytes)) != HC_OK)
        return st;
    if (n == 0)
        return HC_OK;
    int e = hc_cu_launch_rmsnorm(s->s, hc_cu_addr(x), hc_cu_addr(w), hc_cu_addr(y), n, dim, eps);
    return hc_cu_check_queued(s, (cudaError_t)e, op);
}

hc_status hc_cu_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                     int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    static const char op[] = "rope";
    hc_device *dev;
    uint64_t width, xbytes, pbytes;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (mode != HC_ROPE_NORM && mode != HC_ROPE_NEOX)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: unknown mode %d (0 or 2)", op, mode);
    if (n_tok < 0 || n_head < 0 || head_dim < 0 || n_rot < 0 || n_rot > head_dim || n_rot % 2)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "%s: bad shape n_tok %lld, n_head %lld, head_dim %lld, n_rot %lld "
                          "(n_rot must be even and <= head_dim)",
                          op, (ll)n_tok, (ll)n_head, (ll)head_dim, (ll)n_rot);
    if (!hc_kit_mul3((uint64_t)n_head, (uint64_t)head_dim, 1, &width) || width > INT64_MAX)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: n_head x head_dim overflows", op);
    if ((st = hc_cu_check_ref_n(dev, op, "x", x, n_tok, (int64_t)width, 4, &xbytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "pos", pos, n_tok, 1, 4, &pbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "x", x, xbytes, "pos", pos, pbytes)) != HC_OK)
        return st;
    if (n_rot > HC_CU_ROPE_MAX_ROT)
        return hc_cu_fail(dev->ctx, HC_E_UNSUPPORTED, "%s: n_rot %lld exceeds %d", op,
                          (ll)n_rot, HC_CU_ROPE_MAX_ROT);
    if (n_tok == 0 || n_head == 0 || n_rot == 0)
        return HC_OK;
    int e = hc_cu_launch_rope(s->s, hc_cu_addr(x), n_tok, n_head, head_dim, n_rot,
                              hc_cu_addr(pos), freq_base, freq_scale, mode);
    return hc_cu_check_queued(s, (cudaError_t)e, op);
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Whole rows of `row` bytes from r to the end of its buffer (r checked). */
static int64_t rows_to_end(hc_ref r, uint64_t row)
{
    return (int64_t)((r.buf->size - r.off) / row);
}

hc_status hc_cu_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                          hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                          float scale)
{
    static const char op[] = "attention";
    hc_device *dev;
    uint64_t qw, qbytes, obytes, pbytes;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_head < 1 || n_head_kv < 1 || head_dim < 1 || n_head % n_head_kv)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "%s: bad shape n_tok %lld, n_head %lld, n_head_kv %lld, head_dim %lld "
                          "(n_head must be a multiple of n_head_kv)",
                          op, (ll)n_tok, (ll)n_head, (ll)n_head_kv, (ll)head_dim);
    if (!hc_kit_mul3((uint64_t)n_head, (uint64_t)head_dim, 4, &qw) || qw > INT64_MAX)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: n_head x head_dim overflows", op);
    qw /= 4;
    const uint64_t kv_row = (uint64_t)n_head_kv * (uint64_t)head_dim * 4; /* <= qw * 4 */
    if ((st = hc_cu_check_ref_n(dev, op, "q", q, n_tok, (int64_t)qw, 4, &qbytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "out", out, n_tok, (int64_t)qw, 4, &obytes)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "pos", pos, n_tok, 1, 4, &pbytes)) != HC_OK ||
        (st = hc_cu_check_ref(dev, op, "k", k, 0, 4)) != HC_OK ||
        (st = hc_cu_check_ref(dev, op, "v", v, 0, 4)) != HC_OK)
        return st;
    int64_t kv_rows = rows_to_end(k, kv_row), v_rows = rows_to_end(v, kv_row);
    if (v_rows < kv_rows)
        kv_rows = v_rows;
    if (kv_rows > INT32_MAX) /* positions are int32 */
        kv_rows = INT32_MAX;
    const uint64_t kvbytes = (uint64_t)kv_rows * kv_row;
    if ((st = hc_cu_check_disjoint(dev, op, "out", out, obytes, "q", q, qbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "out", out, obytes, "pos", pos, pbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "out", out, obytes, "k", k, kvbytes)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "out", out, obytes, "v", v, kvbytes)) != HC_OK)
        return st;
    if (n_head > INT32_MAX)
        return hc_cu_fail(dev->ctx, HC_E_UNSUPPORTED, "%s: %lld heads exceed a 32-bit grid", op,
                          (ll)n_head);
    if (n_tok == 0)
        return HC_OK;

    /* The split (see ATT_TARGET_BLOCKS). */
    int64_t want = ceil_div(ATT_TARGET_BLOCKS, n_head);
    if (want > ATT_MAX_SLICES)
        want = ATT_MAX_SLICES;
    int64_t slice = ceil_div(kv_rows > 0 ? kv_rows : 1, want);
    slice = ceil_div(slice, ATT_SLICE_UNIT) * ATT_SLICE_UNIT;
    int64_t n_slices = kv_rows > slice ? ceil_div(kv_rows, slice) : 1;
    /* Tokens per launch: the grid's z dimension, and the scratch. */
    int64_t per_launch = n_tok < GRID_YZ_MAX ? n_tok : GRID_YZ_MAX;
    void *part = NULL;
    if (n_slices > 1) {
        const uint64_t per_tok = (uint64_t)n_head * (uint64_t)n_slices *
                                 (uint64_t)hc_cu_attention_part_floats(head_dim) * 4;
        int64_t fit = (int64_t)(ATT_SCRATCH_BYTES / per_tok);
        if (fit < 1)
            fit = 1;
        if (fit < per_launch)
            per_launch = fit;
        uint64_t bytes;
        if (!hc_kit_mul3(per_tok, (uint64_t)per_launch, 1, &bytes))
            return hc_cu_fail(dev->ctx, HC_E_NOMEM, "%s: scratch size overflows", op);
        if ((st = hc_cu_stream_scratch(s, bytes, &part)) != HC_OK)
            return st;
    }
    for (int64_t t0 = 0; t0 < n_tok; t0 += per_launch) {
        const int64_t tn = n_tok - t0 < per_launch ? n_tok - t0 : per_launch;
        int e = hc_cu_launch_attention(s->s, hc_cu_addr(q), hc_cu_addr(k), hc_cu_addr(v),
                                       hc_cu_addr(out), hc_cu_addr(pos), t0, tn, n_head,
                                       n_head_kv, head_dim, scale, kv_rows, slice, n_slices,
                                       part);
        if ((st = hc_cu_check_queued(s, (cudaError_t)e, op)) != HC_OK)
            return st;
    }
    return HC_OK;
}
