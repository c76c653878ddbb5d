/*
 * The llama forward pass over a batch of tokens, readable in one sitting.
 *
 * Every step is one device op on the model's device; the only host work is
 * the embedding lookup (one row per token, read from the file mapping) and
 * the final logits download.  Variants honoured:
 *  - FFN activation: SwiGLU (silu(gate)*up) or ReGLU (relu(gate - s)*up);
 *  - relu2M-style block inputs: relu(rmsnorm(x)*w - shift) before attention
 *    and FFN (the final norm stays plain);
 *  - grouped-query attention, rope in llama's adjacent-pair layout;
 *  - tied output head (output.weight absent -> token_embd);
 *  - sparse FFN (PowerInfer): a predictor, or the gate itself (oracle),
 *    picks the neurons; only their rows are read and computed.
 */
#include "context.h"

#include <math.h>
#include <string.h>

#include "log.h"
#include "ref/ref.h"

#define F32 sizeof(float)

/* rmsnorm(x) * w, then the optional relu shift of relu2M-style models. */
static int block_input(hc_context *c, const hc_weight *norm, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    if (hc_dev_rmsnorm(d, c->x, norm->ref, c->xn, n, hp->n_embd, hp->norm_eps))
        return -1;
    if (hp->block_input_relu)
        return hc_dev_unary(d, HC_UNARY_RELU_SHIFT, c->xn, c->xn, (int64_t)n * hp->n_embd,
                            hp->block_input_relu_shift);
    return 0;
}

static int attention_block(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    const int64_t e = hp->n_embd, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    /* K and V of the new tokens are written straight into the cache rows of
     * their positions. */
    hc_ref k_all = {c->k_cache[il], 0}, v_all = {c->v_cache[il], 0};
    hc_ref k_new = hc_ref_at(k_all, (uint64_t)c->n_past * kv_dim * F32);
    hc_ref v_new = hc_ref_at(v_all, (uint64_t)c->n_past * kv_dim * F32);

    if (block_input(c, &l->attn_norm, n) ||
        hc_dev_matmul(d, l->wq.type, l->wq.ref, e, e, c->xn, n, c->q) ||
        hc_dev_matmul(d, l->wk.type, l->wk.ref, kv_dim, e, c->xn, n, k_new) ||
        hc_dev_matmul(d, l->wv.type, l->wv.ref, kv_dim, e, c->xn, n, v_new) ||
        hc_dev_rope(d, c->q, n, hp->n_head, hp->head_dim, hp->n_rot, c->pos,
                    hp->rope_freq_base, hp->rope_freq_scale, hp->rope_mode) ||
        hc_dev_rope(d, k_new, n, hp->n_head_kv, hp->head_dim, hp->n_rot, c->pos,
                    hp->rope_freq_base, hp->rope_freq_scale, hp->rope_mode) ||
        hc_dev_attention(d, c->q, k_all, v_all, c->att, n, c->pos, hp->n_head, hp->n_head_kv,
                         hp->head_dim, 1.0f / sqrtf((float)hp->head_dim)) ||
        hc_dev_matmul(d, l->wo.type, l->wo.ref, e, e, c->att, n, c->o) ||
        hc_dev_binary(d, HC_BINARY_ADD, c->x, c->o, c->x, (int64_t)n * e))
        return -1;
    return 0;
}

/* Let the observer see this layer's pre-norm residual and complete h. */
static int observe(hc_context *c, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    if (hc_dev_download(d, c->host_p, c->x, (uint64_t)n * hp->n_embd * F32) ||
        hc_dev_download(d, c->host_h, c->gate, (uint64_t)n * hp->n_ff * F32) || hc_dev_sync(d))
        return -1;
    hc_ffn_observation obs = {il, n, hp->n_embd, hp->n_ff, c->host_p, c->host_h};
    c->observer(c->observer_user, &obs);
    return 0;
}

/* h (in c->gate) times the down projection, added to the residual.  With
 * down stored transposed that is axpy_rows over `rows` (all of them when
 * dense); with plain ffn_down a dense matmul, which needs h complete: exact
 * zeros wherever a row was skipped (the oracle guarantees that). */
static int ffn_down_add(hc_context *c, const hc_layer *l, int n, hc_ref rows, int64_t n_rows)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    if (hc_weight_present(&l->ffn_down_t))
        return hc_dev_axpy_rows(d, l->ffn_down_t.type, l->ffn_down_t.ref, ff, e, c->gate, n,
                                rows, n_rows, c->x);
    return hc_dev_matmul(d, l->ffn_down.type, l->ffn_down.ref, e, ff, c->gate, n, c->o) ||
                   hc_dev_binary(d, HC_BINARY_ADD, c->x, c->o, c->x, (int64_t)n * e)
               ? -1
               : 0;
}

static int ffn_dense(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    if (hc_dev_matmul(d, l->ffn_gate.type, l->ffn_gate.ref, ff, e, c->xn, n, c->gate) ||
        hc_dev_matmul(d, l->ffn_up.type, l->ffn_up.ref, ff, e, c->xn, n, c->up) ||
        hc_dev_glu(d, hp->ffn_act, c->gate, c->up, c->gate, (int64_t)n * ff, hp->ffn_gate_shift))
        return -1;
    if (c->observer && observe(c, il, n))
        return -1;
    c->acc[il].forwards++;
    c->acc[il].computed += 1.0;
    return ffn_down_add(c, l, n, c->all_idx, ff);
}

/* The rows to compute: those the predictor says fire (PowerInfer), or those
 * whose gate really fires (oracle).  A batch takes the union of its tokens'
 * rows.  Writes the list to c->idx and returns its length in *n_idx. */
static int select_rows(hc_context *c, const hc_layer *l, int n, int64_t *n_idx)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    float cut;
    if (hp->sparse == HC_SPARSE_PREDICTOR) {
        /* logits = fc2 . relu(fc1 . p), p = the residual before ffn_norm. */
        if (hc_dev_matmul(d, l->fc1.type, l->fc1.ref, l->pred_rank, e, c->x, n, c->ph) ||
            hc_dev_unary(d, HC_UNARY_RELU_SHIFT, c->ph, c->ph, (int64_t)n * l->pred_rank, 0.0f) ||
            hc_dev_matmul(d, l->fc2.type, l->fc2.ref, ff, l->pred_rank, c->ph, n, c->plog))
            return -1;
        cut = hp->sparse_threshold; /* active iff logit >= cut */
    } else {
        /* The gate itself, for every neuron: active iff gate - shift > 0,
         * i.e. >= the next float above the shift. */
        if (hc_dev_matmul(d, l->ffn_gate.type, l->ffn_gate.ref, ff, e, c->xn, n, c->plog))
            return -1;
        cut = nextafterf(hp->ffn_gate_shift, INFINITY);
    }
    if (hc_dev_download(d, c->host_plog, c->plog, (uint64_t)n * ff * F32) || hc_dev_sync(d))
        return -1;
    memset(c->host_mark, 0, (size_t)ff);
    for (int t = 0; t < n; t++) {
        const float *lg = c->host_plog + (size_t)t * ff;
        for (int64_t r = 0; r < ff; r++)
            c->host_mark[r] |= lg[r] >= cut;
    }
    int64_t k = 0;
    for (int64_t r = 0; r < ff; r++)
        if (c->host_mark[r])
            c->host_idx[k++] = (int32_t)r;
    *n_idx = k;
    if (k > 0 && hc_dev_upload(d, c->idx, c->host_idx, (uint64_t)k * sizeof(int32_t)))
        return -1;
    return 0;
}

/* Predictor quality against the truth: the dense h of every neuron.  Only
 * in checked runs (it costs a dense FFN). */
static int check_prediction(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    struct hc_sparse_layer_acc *a = &c->acc[il];
    if (hc_dev_matmul(d, l->ffn_gate.type, l->ffn_gate.ref, ff, e, c->xn, n, c->gate) ||
        hc_dev_matmul(d, l->ffn_up.type, l->ffn_up.ref, ff, e, c->xn, n, c->up) ||
        hc_dev_glu(d, hp->ffn_act, c->gate, c->up, c->gate, (int64_t)n * ff,
                   hp->ffn_gate_shift) ||
        hc_dev_download(d, c->host_true, c->gate, (uint64_t)n * ff * F32) || hc_dev_sync(d))
        return -1;
    for (int t = 0; t < n; t++) {
        const float *h = c->host_true + (size_t)t * ff, *lg = c->host_plog + (size_t)t * ff;
        for (int64_t r = 0; r < ff; r++) {
            int truly = h[r] != 0.0f, predicted = lg[r] >= hp->sparse_threshold;
            a->n_true += truly;
            a->n_pred += predicted;
            a->n_pred_true += truly && predicted;
        }
    }
    a->checked_tokens += n;
    return 0;
}

/* PowerInfer's FFN: only the selected rows of gate/up are computed and only
 * their rows of down^T are added into the residual. */
static int ffn_sparse(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->dev;
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    int64_t k;
    if (select_rows(c, l, n, &k))
        return -1;
    if (c->sparse_check && check_prediction(c, l, il, n))
        return -1;
    c->acc[il].forwards++;
    c->acc[il].computed += (double)k / (double)ff;
    if (k == 0)
        return 0; /* nothing fires: the FFN adds nothing */
    /* Oracle mode already holds the whole gate in c->plog. */
    hc_ref gate = hp->sparse == HC_SPARSE_ORACLE ? c->plog : c->gate;
    /* Rows outside the list keep stale up values.  axpy_rows never reads
     * their h; for the dense down of a plain GGUF (oracle only) their gate is
     * known to be off, so h = 0 * (finite stale up) = 0 exactly: up is zeroed
     * at context creation and only ever holds finite products after that. */
    if ((hp->sparse == HC_SPARSE_PREDICTOR &&
         hc_dev_matvec_rows(d, l->ffn_gate.type, l->ffn_gate.ref, ff, e, c->xn, n, c->idx, k,
                            c->gate)) ||
        hc_dev_matvec_rows(d, l->ffn_up.type, l->ffn_up.ref, ff, e, c->xn, n, c->idx, k,
                           c->up) ||
        hc_dev_glu(d, hp->ffn_act, gate, c->up, c->gate, (int64_t)n * ff, hp->ffn_gate_shift))
        return -1;
    return ffn_down_add(c, l, n, c->idx, k);
}

static int ffn_block(hc_context *c, const hc_layer *l, int il, int n)
{
    if (block_input(c, &l->ffn_norm, n))
        return -1;
    if (c->m->hp.sparse == HC_SPARSE_OFF || c->observer)
        return ffn_dense(c, l, il, n);
    return ffn_sparse(c, l, il, n);
}

/* Final norm (plain) and the output head, for the last token only. */
static int output_head(hc_context *c, int n, float *logits)
{
    const hc_model *m = c->m;
    const hc_hparams *hp = &m->hp;
    hc_dev *d = &c->m->dev;
    hc_ref last = hc_ref_at(c->x, (uint64_t)(n - 1) * hp->n_embd * F32);
    if (hc_dev_rmsnorm(d, last, m->output_norm.ref, c->xn, 1, hp->n_embd, hp->norm_eps) ||
        hc_dev_matmul(d, m->output.type, m->output.ref, hp->n_vocab, hp->n_embd, c->xn, 1,
                      c->logits) ||
        hc_dev_download(d, logits, c->logits, (uint64_t)hp->n_vocab * F32))
        return -1;
    return 0;
}

int hc_forward(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    hc_model *m = c->m;
    const hc_hparams *hp = &m->hp;
    hc_dev *d = &m->dev;
    const uint64_t emb_row = hc_type_row_size(m->tok_embd.type, hp->n_embd);

    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab) {
            hc_set_error("token id %d is outside the vocabulary (0..%d)", tokens[i],
                         hp->n_vocab - 1);
            return -1;
        }
        hc_ref_dequantize_row(m->tok_embd.type,
                              (const uint8_t *)m->tok_embd.host + (uint64_t)tokens[i] * emb_row,
                              c->host_x + (size_t)i * hp->n_embd, hp->n_embd);
        c->host_pos[i] = c->n_past + i;
    }
    if (hc_dev_upload(d, c->x, c->host_x, (uint64_t)n * hp->n_embd * F32) ||
        hc_dev_upload(d, c->pos, c->host_pos, (uint64_t)n * sizeof(int32_t)))
        return -1;

    for (int il = 0; il < hp->n_layer; il++) {
        const hc_layer *l = &m->layers[il];
        if (attention_block(c, l, il, n) || ffn_block(c, l, il, n))
            return -1;
    }
    if (logits && output_head(c, n, logits))
        return -1;
    /* The staging buffers and logits are only safe to reuse/read after this. */
    return hc_dev_sync(d);
}
