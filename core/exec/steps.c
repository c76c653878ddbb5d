/* The dense steps of a recipe, on the device holding x (see exec.h). */
#include "exec/exec.h"


#include "exec/moves.h"
#include "ref/ref.h"
#include "util/log.h"

int hc_exec_embed(hc_context *c, const hc_weight *emb, const int32_t *tokens, int n, int on)
{
    const hc_hparams *hp = &c->m->hp;
    if (hc_embed_host(c, emb, tokens, n))
        return -1;
    c->graph_emb = emb;
    c->x_on = on;
    for (int d = 0; d < (c->m->has_gpu ? 2 : 1); d++)
        if (hc_dev_upload(hc_ctx_dev(c, d), c->a[d].pos, c->host_pos,
                          (uint64_t)n * sizeof(int32_t)))
            return -1;
    if (hc_dev_upload(hc_ctx_dev(c, on), c->a[on].x, c->host_x, (uint64_t)n * hp->n_embd * HC_F32))
        return -1;
    c->run.bytes_moved += (uint64_t)n * hp->n_embd * HC_F32;
    return 0;
}

int hc_exec_to(hc_context *c, int on)
{
    return hc_move_x(c, on, c->n_tok);
}

int hc_exec_rmsnorm(hc_context *c, hc_act x, const hc_weight *w, hc_act y, float eps)
{
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    return hc_dev_rmsnorm(hc_ctx_dev(c, on), A->at[x], hc_weight_at(w, on), A->at[y], c->n_tok,
                          w->cols, eps);
}

int hc_exec_unary(hc_context *c, int op, hc_act x, hc_act y, float param)
{
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    return hc_dev_unary(hc_ctx_dev(c, on), op, A->at[x], A->at[y],
                        (int64_t)c->n_tok * c->m->hp.n_embd, param);
}

int hc_exec_matmul(hc_context *c, const hc_weight *w, hc_act x, hc_act y)
{
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    return hc_dev_matmul(hc_ctx_dev(c, on), w->type, hc_weight_at(w, on), w->rows, w->cols,
                         A->at[x], c->n_tok, A->at[y]);
}

int hc_exec_add(hc_context *c, hc_act y, hc_act b)
{
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    return hc_dev_binary(hc_ctx_dev(c, on), HC_BINARY_ADD, A->at[y], A->at[b], A->at[y],
                         (int64_t)c->n_tok * c->m->hp.n_embd);
}

/* Layer il's K (or V) cache, and its rows from position n_past on. */
static hc_ref kv_all(hc_buffer *b)
{
    return (hc_ref){b, 0};
}

static hc_ref kv_new(const hc_context *c, hc_buffer *b)
{
    const hc_hparams *hp = &c->m->hp;
    const uint64_t kv_dim = (uint64_t)hp->n_head_kv * hp->head_dim;
    return hc_ref_at(kv_all(b), (uint64_t)c->n_past * kv_dim * HC_F32);
}

/* Where the pass's new K (V) rows are computed: straight into the cache at
 * n_past, or, on a device that scatters rows to positions it holds, into
 * the KNEW (VNEW) slot, stored by hc_exec_attention.  Scattered, no
 * argument of a pass depends on n_past (it can be captured once). */
static int kv_scattered(hc_context *c, int on)
{
    return hc_dev_uses(hc_ctx_dev(c, on), HC_OP_SCATTER_ROWS);
}

static hc_ref new_k(hc_context *c, int on, int il)
{
    return kv_scattered(c, on) ? c->a[on].knew : kv_new(c, c->k_cache[il]);
}

static hc_ref new_v(hc_context *c, int on, int il)
{
    return kv_scattered(c, on) ? c->a[on].vnew : kv_new(c, c->v_cache[il]);
}

int hc_exec_qkv(hc_context *c, const hc_weight *wq, const hc_weight *wk, const hc_weight *wv,
                int il)
{
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    /* q, k and v of the same input in one call: one piece of work for the
     * device instead of three (two of them small). */
    const hc_ref every = {NULL, 0};
    const hc_matmul_desc qkv[3] = {
        {wq->type, hc_weight_at(wq, on), wq->rows, every, 0, A->q},
        {wk->type, hc_weight_at(wk, on), wk->rows, every, 0, new_k(c, on, il)},
        {wv->type, hc_weight_at(wv, on), wv->rows, every, 0, new_v(c, on, il)}};
    return hc_dev_matmul_batch(hc_ctx_dev(c, on), qkv, 3, wq->cols, A->xn, c->n_tok);
}

int hc_exec_rope_qk(hc_context *c, int il)
{
    const hc_hparams *hp = &c->m->hp;
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    hc_dev *d = hc_ctx_dev(c, on);
    return hc_dev_rope(d, A->q, c->n_tok, hp->n_head, hp->head_dim, hp->n_rot, A->pos,
                       hp->rope_freq_base, hp->rope_freq_scale, hp->rope_mode) ||
                   hc_dev_rope(d, new_k(c, on, il), c->n_tok, hp->n_head_kv,
                               hp->head_dim, hp->n_rot, A->pos, hp->rope_freq_base,
                               hp->rope_freq_scale, hp->rope_mode)
               ? -1
               : 0;
}

int hc_exec_attention(hc_context *c, int il, hc_act out, float scale)
{
    const hc_hparams *hp = &c->m->hp;
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    hc_dev *d = hc_ctx_dev(c, on);
    if (kv_scattered(c, on)) {
        const uint64_t row = (uint64_t)hp->n_head_kv * hp->head_dim * HC_F32;
        if (hc_dev_scatter_rows(d, A->knew, kv_all(c->k_cache[il]), row, c->n_tok, A->pos,
                                c->n_ctx) ||
            hc_dev_scatter_rows(d, A->vnew, kv_all(c->v_cache[il]), row, c->n_tok, A->pos,
                                c->n_ctx))
            return -1;
    }
    return hc_dev_attention(d, A->q, kv_all(c->k_cache[il]),
                            kv_all(c->v_cache[il]), A->at[out], c->n_tok, A->pos, hp->n_head,
                            hp->n_head_kv, hp->head_dim, scale);
}

int hc_exec_rmsnorm_last(hc_context *c, const hc_weight *w, float eps)
{
    const int on = c->x_on, rows = c->logit_rows;
    const hc_acts *A = &c->a[on];
    const hc_ref last = hc_ref_at(A->x, (uint64_t)(c->n_tok - rows) * w->cols * HC_F32);
    return hc_dev_rmsnorm(hc_ctx_dev(c, on), last, hc_weight_at(w, on), A->xn, rows, w->cols,
                          eps);
}

int hc_exec_logits(hc_context *c, const hc_weight *w, float *logits)
{
    const int on = c->x_on;
    const hc_acts *A = &c->a[on];
    hc_dev *d = hc_ctx_dev(c, on);
    /* Into the context's pinned host_logits, read once the pass has ended
     * (hc_forward waits for both devices and copies them to `logits`). */
    (void)logits;
    const uint64_t bytes = (uint64_t)c->logit_rows * w->rows * HC_F32;
    if (hc_dev_matmul(d, w->type, hc_weight_at(w, on), w->rows, w->cols, A->xn, c->logit_rows,
                      A->logits) ||
        hc_dev_download(d, c->host_logits, A->logits, bytes))
        return -1;
    c->run.bytes_moved += bytes;
    return 0;
}
