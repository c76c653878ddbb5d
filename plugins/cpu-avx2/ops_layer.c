/*
 * Layer ops: rmsnorm, rope, attention and the element-wise ops.  Argument
 * checks here, arithmetic in kernels_layer.c and kernels_attention.c.  Small
 * calls (one decode token) run on the calling thread: waking the pool would
 * cost more than the op.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_plugin.h"

typedef long long ll;

/* Elements below which an op runs on the caller alone. */
#define PARALLEL_MIN_ELEMS (1 << 16)

static int threads_for(hc_plugin_ctx *ctx, uint64_t work)
{
    return work < PARALLEL_MIN_ELEMS ? 1 : hc_cpu_pool_size(ctx->pool);
}

static void run(hc_plugin_ctx *ctx, hc_cpu_task_fn fn, void *args, uint64_t work)
{
    pthread_mutex_lock(&ctx->lock);
    hc_cpu_pool_run(ctx->pool, fn, args, threads_for(ctx, work));
    pthread_mutex_unlock(&ctx->lock);
}

hc_status hc_cpu_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                         float eps)
{
    static const char op[] = "rmsnorm";
    hc_plugin_ctx *ctx;
    void *xp, *wp, *yp;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (n < 0 || dim < 1)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: bad shape n %lld, dim %lld (dim must be >= 1)",
                           op, (ll)n, (ll)dim);
    if ((st = hc_cpu_ref_n(ctx, op, "x", x, n, dim, 4, &xp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "w", w, dim, 1, 4, &wp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "y", y, n, dim, 4, &yp)) != HC_OK)
        return st;
    uint64_t bytes = (uint64_t)n * (uint64_t)dim * 4;
    if ((st = hc_cpu_same_or_disjoint(ctx, op, "y", yp, bytes, "x", xp, bytes)) ||
        (st = hc_cpu_disjoint(ctx, op, "y", yp, bytes, "w", wp, (uint64_t)dim * 4)))
        return st;
    if (n == 0)
        return HC_OK;
    hc_cpu_rmsnorm_args a = {xp, wp, yp, n, dim, eps};
    run(ctx, hc_cpu_rmsnorm_task, &a, (uint64_t)n * (uint64_t)dim);
    return HC_OK;
}

/* The cos/sin table of one position, kept from the last call that had the
 * same parameters: a decoded token's q and k rotate by the same angles in
 * every layer (44 calls for a 22-layer model), and the table's pow, cos and
 * sin cost more than the rotation.  NULL (the task makes its own) if memory
 * runs out.  Called under ctx->lock. */
static const float *rope_table_of(hc_plugin_ctx *ctx, int64_t n_rot, float freq_base,
                                  float freq_scale, int32_t pos)
{
    if (ctx->rope.cs && ctx->rope.n_rot == n_rot && ctx->rope.pos == pos &&
        memcmp(&ctx->rope.freq_base, &freq_base, sizeof freq_base) == 0 &&
        memcmp(&ctx->rope.freq_scale, &freq_scale, sizeof freq_scale) == 0)
        return ctx->rope.cs;
    if (!ctx->rope.cs || ctx->rope.n_rot < n_rot) {
        /* n_rot floats of table, then n_rot/2 doubles (8-byte aligned:
         * n_rot is even, so n_rot floats fill whole doubles). */
        float *cs = malloc((size_t)n_rot * sizeof(float) + (size_t)(n_rot / 2) * sizeof(double));
        if (!cs)
            return NULL;
        free(ctx->rope.cs);
        ctx->rope.cs = cs;
    }
    hc_cpu_rope_cs(n_rot, freq_base, freq_scale, pos, ctx->rope.cs,
                   (double *)(ctx->rope.cs + n_rot));
    ctx->rope.n_rot = n_rot;
    ctx->rope.freq_base = freq_base;
    ctx->rope.freq_scale = freq_scale;
    ctx->rope.pos = pos;
    return ctx->rope.cs;
}

hc_status hc_cpu_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                      int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    static const char op[] = "rope";
    hc_plugin_ctx *ctx;
    void *xp, *pp, *scratch;
    uint64_t width;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (mode != HC_ROPE_NORM && mode != HC_ROPE_NEOX)
        return hc_cpu_fail(ctx, HC_E_UNSUPPORTED, "%s: mode %d is not supported (0 or 2)", op,
                           mode);
    if (n_tok < 0 || n_head < 0 || head_dim < 0 || n_rot < 0 || n_rot > head_dim || n_rot % 2)
        return hc_cpu_fail(ctx, HC_E_INVALID,
                           "%s: bad shape n_tok %lld, n_head %lld, head_dim %lld, n_rot %lld "
                           "(n_rot must be even and <= head_dim)",
                           op, (ll)n_tok, (ll)n_head, (ll)head_dim, (ll)n_rot);
    if (!hc_kit_mul3((uint64_t)n_head, (uint64_t)head_dim, 1, &width) || width > INT64_MAX)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: n_head x head_dim overflows", op);
    if ((st = hc_cpu_ref_n(ctx, op, "x", x, n_tok, (int64_t)width, 4, &xp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "pos", pos, n_tok, 1, 4, &pp)) != HC_OK ||
        (st = hc_cpu_disjoint(ctx, op, "x", xp, (uint64_t)n_tok * width * 4, "pos", pp,
                              (uint64_t)n_tok * 4)))
        return st;
    if (n_tok == 0 || n_head == 0 || n_rot == 0)
        return HC_OK;
    pthread_mutex_lock(&ctx->lock);
    int nth = threads_for(ctx, (uint64_t)n_tok * width);
    st = hc_cpu_scratch(ctx, op, (size_t)nth * 2 * (size_t)n_rot * sizeof(float), &scratch);
    if (st == HC_OK) {
        hc_cpu_rope_args a = {xp,        pp,         n_tok, n_head,  head_dim, n_rot,
                              freq_base, freq_scale, mode,  scratch, NULL};
        if (n_tok == 1)
            a.table = rope_table_of(ctx, n_rot, freq_base, freq_scale, *(const int32_t *)pp);
        hc_cpu_pool_run(ctx->pool, hc_cpu_rope_task, &a, nth);
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

hc_status hc_cpu_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                           hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                           float scale)
{
    static const char op[] = "attention";
    hc_plugin_ctx *ctx;
    void *qp, *kp, *vp, *op_, *pp, *scratch;
    uint64_t qw, kvw;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_head < 1 || n_head_kv < 1 || head_dim < 1 || n_head % n_head_kv)
        return hc_cpu_fail(ctx, HC_E_INVALID,
                           "%s: bad shape n_tok %lld, n_head %lld, n_head_kv %lld, head_dim %lld "
                           "(n_head must be a multiple of n_head_kv)",
                           op, (ll)n_tok, (ll)n_head, (ll)n_head_kv, (ll)head_dim);
    if (!hc_kit_mul3((uint64_t)n_head, (uint64_t)head_dim, 1, &qw) || qw > INT64_MAX)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: n_head x head_dim overflows", op);
    kvw = (uint64_t)n_head_kv * (uint64_t)head_dim;
    if ((st = hc_cpu_ref_n(ctx, op, "q", q, n_tok, (int64_t)qw, 4, &qp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "out", out, n_tok, (int64_t)qw, 4, &op_)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "pos", pos, n_tok, 1, 4, &pp)) != HC_OK)
        return st;
    /* The cache must hold every position some token attends to. */
    const int32_t *pv = pp;
    int64_t max_pos = -1;
    for (int64_t t = 0; t < n_tok; t++) {
        if (pv[t] < 0)
            return hc_cpu_fail(ctx, HC_E_INVALID, "%s: pos[%lld] = %d is negative", op, (ll)t,
                               (int)pv[t]);
        if (pv[t] > max_pos)
            max_pos = pv[t];
    }
    if (n_tok == 0)
        return HC_OK;
    if ((st = hc_cpu_ref_n(ctx, op, "k", k, max_pos + 1, (int64_t)kvw, 4, &kp)) != HC_OK ||
        (st = hc_cpu_ref_n(ctx, op, "v", v, max_pos + 1, (int64_t)kvw, 4, &vp)) != HC_OK)
        return st;
    uint64_t ob = (uint64_t)n_tok * qw * 4, kvb = (uint64_t)(max_pos + 1) * kvw * 4;
    if ((st = hc_cpu_disjoint(ctx, op, "out", op_, ob, "q", qp, ob)) ||
        (st = hc_cpu_disjoint(ctx, op, "out", op_, ob, "k", kp, kvb)) ||
        (st = hc_cpu_disjoint(ctx, op, "out", op_, ob, "v", vp, kvb)) ||
        (st = hc_cpu_disjoint(ctx, op, "out", op_, ob, "pos", pp, (uint64_t)n_tok * 4)))
        return st;

    pthread_mutex_lock(&ctx->lock);
    /* Work ~ tokens x heads x positions x head_dim multiply-adds, twice
     * (scores, then the weighted sum of v).  One thread takes about 20 us
     * for 32 heads of 64 at 64 positions, far more than waking the pool
     * (~1 us), so from 16 positions of one such token on the heads are
     * split: */
    uint64_t work = (uint64_t)n_tok * qw * (uint64_t)(max_pos + 1);
    int nth = threads_for(ctx, work * 2);
    if ((int64_t)nth > n_tok * n_head)
        nth = (int)(n_tok * n_head);
    /* Scores: one row per thread, padded to whole vectors. */
    int64_t stride = (max_pos + 1 + 15) & ~(int64_t)15;
    st = hc_cpu_scratch(ctx, op, (size_t)nth * (size_t)stride * sizeof(float), &scratch);
    if (st == HC_OK) {
        hc_cpu_attn_args a = {qp,     kp,        vp,       op_,   pv,      n_tok,
                              n_head, n_head_kv, head_dim, scale, scratch, stride};
        hc_cpu_pool_run(ctx->pool, hc_cpu_attention_task, &a, nth);
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* unary, binary and glu: y is n floats, inputs may be y itself. */
static hc_status eltwise(hc_stream *s, const char *op, const char *na, hc_ref a, const char *nb,
                         const hc_ref *b, const char *ny, hc_ref y, int64_t n,
                         hc_cpu_eltwise_args *args, hc_cpu_task_fn fn)
{
    hc_plugin_ctx *ctx;
    void *ap, *bp = NULL, *yp;
    hc_status st = hc_cpu_stream_ctx(s, op, &ctx);

    if (st != HC_OK)
        return st;
    if (n < 0)
        return hc_cpu_fail(ctx, HC_E_INVALID, "%s: negative n %lld", op, (ll)n);
    if ((st = hc_cpu_ref_n(ctx, op, na, a, n, 1, 4, &ap)) != HC_OK ||
        (b && (st = hc_cpu_ref_n(ctx, op, nb, *b, n, 1, 4, &bp)) != HC_OK) ||
        (st = hc_cpu_ref_n(ctx, op, ny, y, n, 1, 4, &yp)) != HC_OK)
        return st;
    uint64_t bytes = (uint64_t)n * 4;
    if ((st = hc_cpu_same_or_disjoint(ctx, op, ny, yp, bytes, na, ap, bytes)) ||
        (b && (st = hc_cpu_same_or_disjoint(ctx, op, ny, yp, bytes, nb, bp, bytes))))
        return st;
    if (n == 0)
        return HC_OK;
    args->a = ap;
    args->b = bp;
    args->y = yp;
    args->n = n;
    run(ctx, fn, args, (uint64_t)n);
    return HC_OK;
}

hc_status hc_cpu_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    hc_plugin_ctx *ctx;
    hc_status st = hc_cpu_stream_ctx(s, "unary", &ctx);

    if (st != HC_OK)
        return st;
    if (op != HC_UNARY_RELU_SHIFT && op != HC_UNARY_SILU && op != HC_UNARY_SCALE)
        return hc_cpu_fail(ctx, HC_E_UNSUPPORTED, "unary: op %d is not supported", op);
    hc_cpu_eltwise_args a = {.op = op, .param = param};
    return eltwise(s, "unary", "x", x, NULL, NULL, "y", y, n, &a, hc_cpu_unary_task);
}

hc_status hc_cpu_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    hc_plugin_ctx *ctx;
    hc_status st = hc_cpu_stream_ctx(s, "binary", &ctx);

    if (st != HC_OK)
        return st;
    if (op != HC_BINARY_ADD && op != HC_BINARY_MUL)
        return hc_cpu_fail(ctx, HC_E_UNSUPPORTED, "binary: op %d is not supported", op);
    hc_cpu_eltwise_args args = {.op = op};
    return eltwise(s, "binary", "a", a, "b", &b, "y", y, n, &args, hc_cpu_binary_task);
}

hc_status hc_cpu_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift)
{
    hc_plugin_ctx *ctx;
    hc_status st = hc_cpu_stream_ctx(s, "glu", &ctx);

    if (st != HC_OK)
        return st;
    if (act != HC_GLU_SILU && act != HC_GLU_RELU && act != HC_GLU_RELU_BOTH)
        return hc_cpu_fail(ctx, HC_E_UNSUPPORTED, "glu: activation %d is not supported", act);
    hc_cpu_eltwise_args a = {.op = act, .param = shift};
    return eltwise(s, "glu", "g", g, "u", &u, "h", h, n, &a, hc_cpu_glu_task);
}
