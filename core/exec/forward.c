/*
 * The llama forward pass over a batch of tokens, readable in one sitting.
 *
 * Each step is a device op on the device the placement chose for it (see
 * core/runtime/placement.h and model_place.c): without a GPU everything is on the
 * CPU; with one, a layer's attention runs where its weights and KV cache
 * are, and its FFN is split by neuron: the GPU computes the hot rows it
 * holds (compact copies), the CPU the cold ones, at the same time.  The
 * residual stream lives on one device at a time (c->x_on) and moves only
 * when the next step is elsewhere; the FFN partial of the device that does
 * not hold it crosses over and is added.  Host work: the embedding lookup,
 * turning predictor logits into row lists, the logits download.
 *
 * Variants honoured:
 *  - FFN activation: SwiGLU (silu(gate)*up), ReGLU (relu(gate - s)*up) or
 *    dReLU (relu(gate)*relu(up));
 *  - relu2M-style block inputs: relu(rmsnorm(x)*w - shift) before attention
 *    and FFN (the final norm stays plain);
 *  - grouped-query attention, rope in llama's adjacent-pair layout;
 *  - tied output head (output.weight absent -> token_embd);
 *  - sparse FFN (PowerInfer): a predictor, or the gate itself (oracle),
 *    picks the neurons; only their rows are read and computed.
 */
#include "exec/context.h"

#include <math.h>
#include <string.h>

#include "ref/ref.h"
#include "util/log.h"

#define F32 sizeof(float)

static hc_dev *dev_at(hc_context *c, int on)
{
    return on == HC_ON_GPU ? &c->m->gpu : &c->m->cpu;
}

static hc_ref wref(const hc_weight *w, int on)
{
    return on == HC_ON_GPU ? w->gref : w->ref;
}

/* Host address of a CPU-device place: CPU buffers are host memory. */
static void *cpu_ptr(hc_context *c, hc_ref r)
{
    return (uint8_t *)c->m->cpu.ops->buffer_host_ptr(r.buf) + r.off;
}

/* Copy `bytes` from one device's place to the other's.  One of them is the
 * CPU, whose buffers are host memory: a single download or upload, waited
 * for so that neither side's later ops can race it. */
static int cross(hc_context *c, int from, hc_ref src, hc_ref dst, uint64_t bytes)
{
    hc_dev *g = &c->m->gpu;
    c->run.bytes_moved += bytes;
    if (hc_dev_sync(&c->m->cpu))
        return -1;
    if (from == HC_ON_GPU)
        return hc_dev_download(g, cpu_ptr(c, dst), src, bytes) || hc_dev_sync(g) ? -1 : 0;
    return hc_dev_upload(g, dst, cpu_ptr(c, src), bytes) || hc_dev_sync(g) ? -1 : 0;
}

/* Bring the residual stream to device `on`. */
static int move_x(hc_context *c, int on, int n)
{
    if (c->x_on == on)
        return 0;
    if (cross(c, c->x_on, c->a[c->x_on].x, c->a[on].x, (uint64_t)n * c->m->hp.n_embd * F32))
        return -1;
    c->x_on = on;
    return 0;
}

/* rmsnorm(x) * w, then the optional relu shift of relu2M-style models;
 * on the device holding x, into its xn. */
static int block_input(hc_context *c, const hc_weight *norm, int n)
{
    const hc_hparams *hp = &c->m->hp;
    const int on = c->x_on;
    hc_dev *d = dev_at(c, on);
    hc_acts *A = &c->a[on];
    if (hc_dev_rmsnorm(d, A->x, wref(norm, on), A->xn, n, hp->n_embd, hp->norm_eps))
        return -1;
    if (hp->block_input_relu)
        return hc_dev_unary(d, HC_UNARY_RELU_SHIFT, A->xn, A->xn, (int64_t)n * hp->n_embd,
                            hp->block_input_relu_shift);
    return 0;
}

static int attention_block(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    const int on = l->attn_gpu;
    const int64_t e = hp->n_embd, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    if (move_x(c, on, n))
        return -1;
    hc_dev *d = dev_at(c, on);
    hc_acts *A = &c->a[on];
    /* K and V of the new tokens are written straight into the cache rows of
     * their positions. */
    hc_ref k_all = {c->k_cache[il], 0}, v_all = {c->v_cache[il], 0};
    hc_ref k_new = hc_ref_at(k_all, (uint64_t)c->n_past * kv_dim * F32);
    hc_ref v_new = hc_ref_at(v_all, (uint64_t)c->n_past * kv_dim * F32);

    /* q, k and v of the same input in one call: one piece of work for the
     * device instead of three (two of them small). */
    const hc_ref every = {NULL, 0};
    const hc_matmul_desc qkv[3] = {{l->wq.type, wref(&l->wq, on), e, every, 0, A->q},
                                   {l->wk.type, wref(&l->wk, on), kv_dim, every, 0, k_new},
                                   {l->wv.type, wref(&l->wv, on), kv_dim, every, 0, v_new}};

    if (block_input(c, &l->attn_norm, n) || hc_dev_matmul_batch(d, qkv, 3, e, A->xn, n) ||
        hc_dev_rope(d, A->q, n, hp->n_head, hp->head_dim, hp->n_rot, A->pos,
                    hp->rope_freq_base, hp->rope_freq_scale, hp->rope_mode) ||
        hc_dev_rope(d, k_new, n, hp->n_head_kv, hp->head_dim, hp->n_rot, A->pos,
                    hp->rope_freq_base, hp->rope_freq_scale, hp->rope_mode) ||
        hc_dev_attention(d, A->q, k_all, v_all, A->att, n, A->pos, hp->n_head, hp->n_head_kv,
                         hp->head_dim, 1.0f / sqrtf((float)hp->head_dim)) ||
        hc_dev_matmul(d, l->wo.type, wref(&l->wo, on), e, e, A->att, n, A->o) ||
        hc_dev_binary(d, HC_BINARY_ADD, A->x, A->o, A->x, (int64_t)n * e))
        return -1;
    return 0;
}

/* ---- the FFN, split into the GPU's share and the CPU's ------------------- */

/* One device's part of a layer's FFN: its neurons, their weights there. */
typedef struct share {
    int on;
    int64_t rows;        /* rows of its matrices: n_hot (GPU) or n_ff (CPU) */
    int64_t n_neurons;   /* neurons it holds */
    hc_ref gate, up, down;
    int transposed;      /* down is down_t rows (axpy_rows), else ffn_down */
    int64_t k;           /* active rows this pass */
    hc_ref list;         /* their row numbers (in its matrices) */
} share;

static void make_shares(hc_context *c, const hc_layer *l, share s[2])
{
    const hc_model *m = c->m;
    const int64_t ff = m->hp.n_ff;
    const int transposed = hc_weight_present(&l->ffn_down_t);
    const hc_weight *down = transposed ? &l->ffn_down_t : &l->ffn_down;
    s[HC_ON_CPU] = (share){HC_ON_CPU, ff, m->has_gpu ? l->n_cold : ff, l->ffn_gate.ref,
                           l->ffn_up.ref, down->ref, transposed, 0, c->a[HC_ON_CPU].idx};
    s[HC_ON_GPU] = (share){HC_ON_GPU, l->n_hot, m->has_gpu ? l->n_hot : 0, l->hot_gate,
                           l->hot_up, l->hot_down, transposed, 0, c->a[HC_ON_GPU].idx};
}

/* Let the observer see this layer's pre-norm residual and complete h (CPU
 * only: see hc_context_set_ffn_observer). */
static int observe(hc_context *c, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->cpu;
    hc_acts *A = &c->a[HC_ON_CPU];
    if (hc_dev_download(d, c->host_p, A->x, (uint64_t)n * hp->n_embd * F32) ||
        hc_dev_download(d, c->host_h, A->gate, (uint64_t)n * hp->n_ff * F32) || hc_dev_sync(d))
        return -1;
    hc_ffn_observation obs = {il, n, hp->n_embd, hp->n_ff, c->host_p, c->host_h};
    c->observer(c->observer_user, &obs);
    return 0;
}

/* Predictor logits, or the true gate of every neuron (oracle), into
 * c->host_plog [n][n_ff]. */
static int score_neurons(hc_context *c, const hc_layer *l, const share s[2], int n)
{
    const hc_hparams *hp = &c->m->hp;
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    if (hp->sparse == HC_SPARSE_PREDICTOR) {
        /* logits = fc2 . relu(fc1 . p), p = the residual before ffn_norm. */
        const int on = l->pred_gpu;
        hc_dev *d = dev_at(c, on);
        hc_acts *A = &c->a[on];
        hc_ref p = A->x;
        if (on != c->x_on) {
            p = A->o;
            if (cross(c, c->x_on, c->a[c->x_on].x, p, (uint64_t)n * e * F32))
                return -1;
        }
        if (hc_dev_matmul(d, l->fc1.type, wref(&l->fc1, on), l->pred_rank, e, p, n, A->ph) ||
            hc_dev_unary(d, HC_UNARY_RELU_SHIFT, A->ph, A->ph, (int64_t)n * l->pred_rank, 0.0f) ||
            hc_dev_matmul(d, l->fc2.type, wref(&l->fc2, on), ff, l->pred_rank, A->ph, n,
                          A->plog) ||
            hc_dev_download(d, c->host_plog, A->plog, (uint64_t)n * ff * F32) || hc_dev_sync(d))
            return -1;
        c->run.bytes_moved += on == HC_ON_GPU ? (uint64_t)n * ff * F32 : 0;
        return 0;
    }
    /* Oracle: each device computes the gate of all its neurons. */
    const share *g = &s[HC_ON_GPU], *u = &s[HC_ON_CPU];
    if (g->n_neurons > 0) {
        hc_dev *d = dev_at(c, HC_ON_GPU);
        if (hc_dev_matmul(d, l->ffn_gate.type, g->gate, g->rows, e, c->a[HC_ON_GPU].xn, n,
                          c->a[HC_ON_GPU].gate) ||
            hc_dev_flush(d))
            return -1;
    }
    if (u->n_neurons > 0) {
        hc_dev *d = &c->m->cpu;
        hc_acts *A = &c->a[HC_ON_CPU];
        if (u->n_neurons == ff ? hc_dev_matmul(d, l->ffn_gate.type, u->gate, ff, e, A->xn, n,
                                               A->gate)
                               : hc_dev_matvec_rows(d, l->ffn_gate.type, u->gate, ff, e, A->xn,
                                                    n, l->cold_idx, u->n_neurons, A->gate))
            return -1;
        if (hc_dev_download(d, c->host_plog, A->gate, (uint64_t)n * ff * F32) || hc_dev_sync(d))
            return -1;
    }
    if (g->n_neurons > 0) {
        hc_dev *d = dev_at(c, HC_ON_GPU);
        const int64_t h = g->rows;
        if (hc_dev_download(d, c->host_gate, c->a[HC_ON_GPU].gate, (uint64_t)n * h * F32) ||
            hc_dev_sync(d))
            return -1;
        c->run.bytes_moved += (uint64_t)n * h * F32;
        for (int t = 0; t < n; t++)
            for (int64_t j = 0; j < h; j++)
                c->host_plog[(size_t)t * ff + l->hot[j]] = c->host_gate[(size_t)t * h + j];
    }
    return 0;
}

/* The active rows of each share: every row (dense), or those whose score
 * passes the cut; a batch takes the union of its tokens' rows.  The lists
 * go to each device's idx. */
static int select_rows(hc_context *c, const hc_layer *l, share s[2], int n, int dense)
{
    const hc_hparams *hp = &c->m->hp;
    const int64_t ff = hp->n_ff;
    int64_t ng = 0, nc = 0;
    if (dense) {
        /* Every neuron of each share: the lists made at load serve (the
         * GPU's compact rows are 0..n_hot-1, a prefix of `all`). */
        ng = s[HC_ON_GPU].n_neurons;
        nc = s[HC_ON_CPU].n_neurons;
        s[HC_ON_GPU].list = c->a[HC_ON_GPU].all;
        s[HC_ON_CPU].list = nc == ff ? c->a[HC_ON_CPU].all : l->cold_idx;
    } else {
        /* Predictor: active iff logit >= threshold.  Oracle: iff the gate
         * fires, gate - shift > 0, i.e. >= the next float above the shift. */
        const float cut = hp->sparse == HC_SPARSE_PREDICTOR
                              ? hp->sparse_threshold
                              : nextafterf(hp->ffn_gate_shift, INFINITY);
        /* restrict: the byte stores could otherwise alias the logits, and
         * the loop would reload every pointer per row instead of being
         * vectorized. */
        uint8_t *restrict mark = c->host_mark;
        memset(mark, 0, (size_t)ff);
        for (int t = 0; t < n; t++) {
            const float *restrict lg = c->host_plog + (size_t)t * ff;
            for (int64_t r = 0; r < ff; r++)
                mark[r] |= lg[r] >= cut;
        }
        if (!c->m->has_gpu) {
            /* Without branches: about one row in ten is active, in no
             * pattern a branch predictor could learn. */
            int32_t *restrict idx = c->host_idx;
            for (int64_t r = 0; r < ff; r++) {
                idx[nc] = (int32_t)r;
                nc += mark[r];
            }
        } else {
            for (int64_t r = 0; r < ff; r++) {
                if (!mark[r])
                    continue;
                const int32_t j = l->gpu_row[r];
                if (j >= 0)
                    c->host_gidx[ng++] = j;
                else
                    c->host_idx[nc++] = (int32_t)r;
            }
        }
        /* A share whose every row is active reads the every-row list. */
        if (ng == s[HC_ON_GPU].rows && ng > 0)
            s[HC_ON_GPU].list = c->a[HC_ON_GPU].all;
        else if (ng > 0 && hc_dev_upload(&c->m->gpu, c->a[HC_ON_GPU].idx, c->host_gidx,
                                         (uint64_t)ng * sizeof(int32_t)))
            return -1;
        else
            c->run.bytes_moved += (uint64_t)ng * sizeof(int32_t);
        if (nc == ff)
            s[HC_ON_CPU].list = c->a[HC_ON_CPU].all;
        else if (nc > 0 && hc_dev_upload(&c->m->cpu, c->a[HC_ON_CPU].idx, c->host_idx,
                                         (uint64_t)nc * sizeof(int32_t)))
            return -1;
    }
    s[HC_ON_GPU].k = ng;
    s[HC_ON_CPU].k = nc;
    c->run.gpu_rows += ng;
    c->run.cpu_rows += nc;
    c->acc[(int)(l - c->m->layers)].forwards++;
    c->acc[(int)(l - c->m->layers)].computed += (double)(ng + nc) / (double)ff;
    return 0;
}

/* Predictor quality against the truth: the dense h of every neuron,
 * computed on the CPU (it holds every weight).  Only in checked runs. */
static int check_prediction(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->m->cpu;
    hc_acts *A = &c->a[HC_ON_CPU];
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    struct hc_sparse_layer_acc *a = &c->acc[il];
    if (hc_dev_matmul(d, l->ffn_gate.type, l->ffn_gate.ref, ff, e, A->xn, n, A->gate) ||
        hc_dev_matmul(d, l->ffn_up.type, l->ffn_up.ref, ff, e, A->xn, n, A->up) ||
        hc_dev_glu(d, hp->ffn_act, A->gate, A->up, A->gate, (int64_t)n * ff,
                   hp->ffn_gate_shift) ||
        hc_dev_download(d, c->host_true, A->gate, (uint64_t)n * ff * F32) || hc_dev_sync(d))
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

/* One share's active rows: gate (unless the oracle computed it), up and
 * the activation, h into its gate buffer.  Rows outside the list keep
 * stale but finite gate/up values (buffers start zeroed, and only finite
 * products are ever written): axpy_rows never reads their h, and for a
 * dense down (plain GGUF, oracle) their gate is known to be off, so
 * h = 0 * finite = 0 exactly. */
static int share_h(hc_context *c, const hc_layer *l, const share *s, int n, int gate_ready)
{
    const hc_hparams *hp = &c->m->hp;
    const int64_t e = hp->n_embd;
    hc_dev *d = dev_at(c, s->on);
    hc_acts *A = &c->a[s->on];
    /* Dense: every row, as plain matmuls; else the listed rows.  Gate and
     * up in one call (one piece of work for the device). */
    const int all = s->k == s->rows;
    const hc_ref list = all ? (hc_ref){NULL, 0} : s->list;
    const int64_t k = all ? 0 : s->k;
    hc_matmul_desc gu[2];
    int nd = 0;
    if (!gate_ready)
        gu[nd++] = (hc_matmul_desc){l->ffn_gate.type, s->gate, s->rows, list, k, A->gate};
    gu[nd++] = (hc_matmul_desc){l->ffn_up.type, s->up, s->rows, list, k, A->up};
    if (hc_dev_matmul_batch(d, gu, nd, e, A->xn, n) ||
        hc_dev_glu(d, hp->ffn_act, A->gate, A->up, A->gate, (int64_t)n * s->rows,
                   hp->ffn_gate_shift))
        return -1;
    return 0;
}

/* h times down added into `y` (the residual, or a partial). */
static int share_down(hc_context *c, const hc_layer *l, const share *s, int n, hc_ref y)
{
    const int64_t e = c->m->hp.n_embd;
    hc_dev *d = dev_at(c, s->on);
    hc_acts *A = &c->a[s->on];
    if (s->transposed)
        return hc_dev_axpy_rows(d, l->ffn_down_t.type, s->down, s->rows, e, A->gate, n, s->list,
                                s->k, y);
    return hc_dev_matmul(d, l->ffn_down.type, s->down, e, s->rows, A->gate, n, A->o) ||
                   hc_dev_binary(d, HC_BINARY_ADD, y, A->o, y, (int64_t)n * e)
               ? -1
               : 0;
}

/* A share's output: straight into the residual on the device holding it,
 * else into that device's partial, zeroed first. */
static int share_target(hc_context *c, const share *s, int n, hc_ref *y)
{
    const uint64_t bytes = (uint64_t)n * c->m->hp.n_embd * F32;
    if (s->on == c->x_on) {
        *y = c->a[s->on].x;
        return 0;
    }
    *y = c->a[s->on].part;
    if (s->on == HC_ON_CPU)
        return hc_dev_sync(&c->m->cpu) ? -1 : (memset(cpu_ptr(c, *y), 0, bytes), 0);
    return hc_dev_upload(&c->m->gpu, *y, c->host_zero, bytes);
}

static int ffn_block(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    const uint64_t ebytes = (uint64_t)n * hp->n_embd * F32;
    share s[2];
    make_shares(c, l, s);
    /* One device holds every neuron: the residual goes there, and nothing
     * else crosses. */
    if (s[HC_ON_GPU].n_neurons == 0 && move_x(c, HC_ON_CPU, n))
        return -1;
    if (s[HC_ON_CPU].n_neurons == 0 && move_x(c, HC_ON_GPU, n))
        return -1;
    const int X = c->x_on, other = !X;
    if (block_input(c, &l->ffn_norm, n))
        return -1;
    const int need_cpu_xn = s[HC_ON_CPU].n_neurons > 0 || c->sparse_check;
    if (X == HC_ON_GPU && need_cpu_xn &&
        cross(c, HC_ON_GPU, c->a[HC_ON_GPU].xn, c->a[HC_ON_CPU].xn, ebytes))
        return -1;
    if (X == HC_ON_CPU && s[HC_ON_GPU].n_neurons > 0 &&
        cross(c, HC_ON_CPU, c->a[HC_ON_CPU].xn, c->a[HC_ON_GPU].xn, ebytes))
        return -1;

    /* An observer needs every neuron's h: the FFN then runs dense. */
    const int dense = hp->sparse == HC_SPARSE_OFF || c->observer;
    if (!dense && score_neurons(c, l, s, n))
        return -1;
    if (select_rows(c, l, s, n, dense))
        return -1;
    if (c->sparse_check && check_prediction(c, l, il, n))
        return -1;

    /* The GPU's rows are queued and started first, so they run while the
     * CPU computes its own; the two outputs then meet in a fixed order
     * (residual += this device's share, then += the other's partial). */
    const int gate_ready = !dense && hp->sparse == HC_SPARSE_ORACLE;
    for (int pass = 0; pass < 2; pass++) {
        const share *sh = &s[pass == 0 ? HC_ON_GPU : HC_ON_CPU];
        hc_ref y;
        if (sh->k == 0)
            continue;
        if (share_h(c, l, sh, n, gate_ready))
            return -1;
        /* The observer sees the residual before the FFN adds to it. */
        if (c->observer && observe(c, il, n))
            return -1;
        if (share_target(c, sh, n, &y) || share_down(c, l, sh, n, y))
            return -1;
        if (sh->on == HC_ON_GPU && hc_dev_flush(&c->m->gpu))
            return -1;
    }
    if (s[other].k > 0 &&
        (cross(c, other, c->a[other].part, c->a[X].o, ebytes) ||
         hc_dev_binary(dev_at(c, X), HC_BINARY_ADD, c->a[X].x, c->a[X].o, c->a[X].x,
                       (int64_t)n * hp->n_embd)))
        return -1;
    return 0;
}

/* Final norm (plain) and the output head, for the last token only. */
static int output_head(hc_context *c, int n, float *logits)
{
    const hc_model *m = c->m;
    const hc_hparams *hp = &m->hp;
    const int on = m->output_gpu;
    if (move_x(c, on, n))
        return -1;
    hc_dev *d = dev_at(c, on);
    hc_acts *A = &c->a[on];
    hc_ref last = hc_ref_at(A->x, (uint64_t)(n - 1) * hp->n_embd * F32);
    if (hc_dev_rmsnorm(d, last, wref(&m->output_norm, on), A->xn, 1, hp->n_embd, hp->norm_eps) ||
        hc_dev_matmul(d, m->output.type, wref(&m->output, on), hp->n_vocab, hp->n_embd, A->xn, 1,
                      A->logits) ||
        hc_dev_download(d, logits, A->logits, (uint64_t)hp->n_vocab * F32))
        return -1;
    c->run.bytes_moved += (uint64_t)hp->n_vocab * F32;
    return 0;
}

int hc_forward(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    hc_model *m = c->m;
    const hc_hparams *hp = &m->hp;
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
    /* The embeddings start where layer 0's attention runs. */
    c->x_on = m->layers[0].attn_gpu;
    for (int on = 0; on < (m->has_gpu ? 2 : 1); on++)
        if (hc_dev_upload(dev_at(c, on), c->a[on].pos, c->host_pos, (uint64_t)n * sizeof(int32_t)))
            return -1;
    if (hc_dev_upload(dev_at(c, c->x_on), c->a[c->x_on].x, c->host_x,
                      (uint64_t)n * hp->n_embd * F32))
        return -1;
    c->run.bytes_moved += (uint64_t)n * hp->n_embd * F32;

    for (int il = 0; il < hp->n_layer; il++) {
        const hc_layer *l = &m->layers[il];
        if (attention_block(c, l, il, n) || ffn_block(c, l, il, n))
            return -1;
    }
    if (logits && output_head(c, n, logits))
        return -1;
    /* The staging buffers and logits are only safe to reuse/read after this. */
    if (m->has_gpu && hc_dev_sync(&m->gpu))
        return -1;
    return hc_dev_sync(&m->cpu);
}
