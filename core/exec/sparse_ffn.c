/*
 * The hybrid sparse FFN of one layer (exec.h's hc_exec_sparse_ffn), split
 * by neuron between the devices: the GPU computes the hot rows it holds
 * (compact copies), the CPU the cold ones, at the same time.
 *
 *   score   predictor logits (or, oracle, the gate itself) -> host;
 *   select  the rows that pass the cut, per device (host work);
 *   shares  gate/up/activation and down of each device's active rows, the
 *           GPU's queued first;
 *   merge   the partial of the device not holding x crosses and is added.
 *
 * A layer whose every neuron is on the GPU, on a plugin that selects on
 * the device (ABI 1.3 select_rows and the counted ops), skips the host:
 * scores, list, count and the sparse products all stay on the GPU, and the
 * count comes down with the pass's one sync, for the statistics only
 * (gpu_layer_ffn).
 *
 * The diagnostics (predictor check, FFN observer) hook in at fixed points
 * (exec/hooks.h).
 */
#include "exec/exec.h"

#include <math.h>
#include <string.h>

#include "exec/hooks.h"
#include "exec/moves.h"

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

/* A share's neurons: the GPU's only when there is a GPU. */
static int64_t gpu_neurons(const hc_context *c, const hc_layer *l)
{
    return c->m->has_gpu ? l->n_hot : 0;
}

static int64_t cpu_neurons(const hc_context *c, const hc_layer *l)
{
    return c->m->has_gpu ? l->n_cold : c->m->hp.n_ff;
}

static void make_shares(hc_context *c, const hc_layer *l, share s[2])
{
    const hc_model *m = c->m;
    const int64_t ff = m->hp.n_ff;
    const int transposed = hc_weight_present(&l->ffn_down_t);
    const hc_weight *down = transposed ? &l->ffn_down_t : &l->ffn_down;
    s[HC_ON_CPU] = (share){HC_ON_CPU, ff, cpu_neurons(c, l), l->ffn_gate.ref, l->ffn_up.ref,
                           down->ref, transposed, 0, c->a[HC_ON_CPU].idx};
    s[HC_ON_GPU] = (share){HC_ON_GPU, l->n_hot, gpu_neurons(c, l), l->hot_gate, l->hot_up,
                           l->hot_down, transposed, 0, c->a[HC_ON_GPU].idx};
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
        hc_dev *d = hc_ctx_dev(c, on);
        hc_acts *A = &c->a[on];
        hc_ref p = A->x;
        if (on != c->x_on) {
            p = A->o;
            if (hc_cross(c, c->x_on, c->a[c->x_on].x, p, (uint64_t)n * e * HC_F32))
                return -1;
        }
        if (hc_dev_matmul(d, l->fc1.type, hc_weight_at(&l->fc1, on), l->pred_rank, e, p, n,
                          A->ph) ||
            hc_dev_unary(d, HC_UNARY_RELU_SHIFT, A->ph, A->ph, (int64_t)n * l->pred_rank, 0.0f) ||
            hc_dev_matmul(d, l->fc2.type, hc_weight_at(&l->fc2, on), ff, l->pred_rank, A->ph, n,
                          A->plog) ||
            hc_dev_download(d, c->host_plog, A->plog, (uint64_t)n * ff * HC_F32) || hc_dev_sync(d))
            return -1;
        c->run.bytes_moved += on == HC_ON_GPU ? (uint64_t)n * ff * HC_F32 : 0;
        return 0;
    }
    /* Oracle: each device computes the gate of all its neurons. */
    const share *g = &s[HC_ON_GPU], *u = &s[HC_ON_CPU];
    if (g->n_neurons > 0) {
        hc_dev *d = hc_ctx_dev(c, HC_ON_GPU);
        if (hc_dev_matmul(d, l->ffn_gate.type, g->gate, g->rows, e, c->a[HC_ON_GPU].xn, n,
                          c->a[HC_ON_GPU].gate) ||
            hc_dev_flush(d))
            return -1;
    }
    if (u->n_neurons > 0) {
        hc_dev *d = &c->cpu;
        hc_acts *A = &c->a[HC_ON_CPU];
        if (u->n_neurons == ff ? hc_dev_matmul(d, l->ffn_gate.type, u->gate, ff, e, A->xn, n,
                                               A->gate)
                               : hc_dev_matvec_rows(d, l->ffn_gate.type, u->gate, ff, e, A->xn,
                                                    n, l->cold_idx, u->n_neurons, A->gate))
            return -1;
        if (hc_dev_download(d, c->host_plog, A->gate, (uint64_t)n * ff * HC_F32) || hc_dev_sync(d))
            return -1;
    }
    if (g->n_neurons > 0) {
        hc_dev *d = hc_ctx_dev(c, HC_ON_GPU);
        const int64_t h = g->rows;
        if (hc_dev_download(d, c->host_gate, c->a[HC_ON_GPU].gate, (uint64_t)n * h * HC_F32) ||
            hc_dev_sync(d))
            return -1;
        c->run.bytes_moved += (uint64_t)n * h * HC_F32;
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
        else if (ng > 0 && hc_dev_upload(&c->gpu, c->a[HC_ON_GPU].idx, c->host_gidx,
                                         (uint64_t)ng * sizeof(int32_t)))
            return -1;
        else
            c->run.bytes_moved += (uint64_t)ng * sizeof(int32_t);
        if (nc == ff)
            s[HC_ON_CPU].list = c->a[HC_ON_CPU].all;
        else if (nc > 0 && hc_dev_upload(&c->cpu, c->a[HC_ON_CPU].idx, c->host_idx,
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
    hc_dev *d = hc_ctx_dev(c, s->on);
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
    hc_dev *d = hc_ctx_dev(c, s->on);
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
    const uint64_t bytes = (uint64_t)n * c->m->hp.n_embd * HC_F32;
    if (s->on == c->x_on) {
        *y = c->a[s->on].x;
        return 0;
    }
    *y = c->a[s->on].part;
    if (s->on == HC_ON_CPU)
        return hc_dev_sync(&c->cpu) ? -1 : (memset(hc_cpu_ptr(c, *y), 0, bytes), 0);
    return hc_dev_upload(&c->gpu, *y, c->host_zero, bytes);
}

/* Can layer l's FFN run with its rows chosen on the GPU?  Every neuron
 * there (compact row j is neuron j: no map), x and the predictor there,
 * nothing wanted on the host (the diagnostics read the scores), and a
 * plugin that does all three ops itself. */
static int gpu_selects(const hc_context *c, const hc_layer *l)
{
    const hc_hparams *hp = &c->m->hp;
    return c->m->has_gpu && cpu_neurons(c, l) == 0 && l->n_hot == hp->n_ff &&
           c->x_on == HC_ON_GPU &&
           (hp->sparse == HC_SPARSE_ORACLE ||
            (hp->sparse == HC_SPARSE_PREDICTOR && l->pred_gpu == HC_ON_GPU)) &&
           !c->sparse_check && !c->observer && hc_dev_selects_on_device(&c->gpu);
}

/* The FFN of a layer wholly on the GPU, rows chosen there: score (the
 * predictor's logits, or the oracle's gate of every neuron), select_rows
 * into the list and this layer's count slot, then gate/up of the listed
 * rows, the activation, and down over them into the residual.  No host
 * synchronisation: the count is downloaded without waiting and counted by
 * hc_sparse_settle once the pass has ended. */
static int gpu_layer_ffn(hc_context *c, const hc_layer *l, int il, const share *g, int n)
{
    const hc_hparams *hp = &c->m->hp;
    const int64_t e = hp->n_embd, rows = g->rows;
    hc_dev *d = &c->gpu;
    hc_acts *A = &c->a[HC_ON_GPU];
    const hc_ref count = hc_ref_at(A->counts, (uint64_t)il * sizeof(int32_t));
    const int oracle = hp->sparse == HC_SPARSE_ORACLE;
    hc_ref scores = A->plog;
    if (oracle) {
        scores = A->gate;
        if (hc_dev_matmul(d, l->ffn_gate.type, g->gate, rows, e, A->xn, n, A->gate))
            return -1;
    } else if (hc_dev_matmul(d, l->fc1.type, l->fc1.gref, l->pred_rank, e, A->x, n, A->ph) ||
               hc_dev_unary(d, HC_UNARY_RELU_SHIFT, A->ph, A->ph, (int64_t)n * l->pred_rank,
                            0.0f) ||
               hc_dev_matmul(d, l->fc2.type, l->fc2.gref, rows, l->pred_rank, A->ph, n,
                             A->plog)) {
        return -1;
    }
    const float cut = oracle ? nextafterf(hp->ffn_gate_shift, INFINITY) : hp->sparse_threshold;
    const hc_ref no_map = {NULL, 0};
    if (hc_dev_select_rows(d, scores, n, rows, cut, no_map, A->idx, count) ||
        (!oracle && hc_dev_matvec_rows_counted(d, l->ffn_gate.type, g->gate, rows, e, A->xn, n,
                                               A->idx, count, rows, A->gate)) ||
        hc_dev_matvec_rows_counted(d, l->ffn_up.type, g->up, rows, e, A->xn, n, A->idx, count,
                                   rows, A->up) ||
        hc_dev_glu(d, hp->ffn_act, A->gate, A->up, A->gate, (int64_t)n * rows,
                   hp->ffn_gate_shift))
        return -1;
    /* Down: over the listed rows (down_t), or every row of ffn_down, where
     * an unlisted row's h is 0 (see share_h). */
    if (g->transposed ? hc_dev_axpy_rows_counted(d, l->ffn_down_t.type, g->down, rows, e, A->gate,
                                                 n, A->idx, count, rows, A->x)
                      : hc_dev_matmul(d, l->ffn_down.type, g->down, e, rows, A->gate, n, A->o) ||
                            hc_dev_binary(d, HC_BINARY_ADD, A->x, A->o, A->x, (int64_t)n * e))
        return -1;
    if (hc_dev_download(d, &c->host_count[il], count, sizeof(int32_t)))
        return -1;
    c->run.bytes_moved += sizeof(int32_t);
    c->counted[il] = 1;
    return 0;
}

int hc_ffn_home(const hc_context *c, const hc_layer *l)
{
    /* One device holds every neuron: the residual goes there, and nothing
     * else crosses. */
    if (gpu_neurons(c, l) == 0)
        return HC_ON_CPU;
    if (cpu_neurons(c, l) == 0)
        return HC_ON_GPU;
    return c->x_on;
}

static int sparse_ffn(hc_context *c, const hc_layer *l, int il)
{
    const hc_hparams *hp = &c->m->hp;
    const int n = c->n_tok;
    const uint64_t ebytes = (uint64_t)n * hp->n_embd * HC_F32;
    share s[2];
    make_shares(c, l, s);
    const int X = c->x_on, other = !X;
    /* Each device with neurons to compute reads xn where it is. */
    const int need_cpu_xn = s[HC_ON_CPU].n_neurons > 0 || hc_hooks_need_cpu_xn(c);
    if (X == HC_ON_GPU && need_cpu_xn &&
        hc_cross(c, HC_ON_GPU, c->a[HC_ON_GPU].xn, c->a[HC_ON_CPU].xn, ebytes))
        return -1;
    if (X == HC_ON_CPU && s[HC_ON_GPU].n_neurons > 0 &&
        hc_cross(c, HC_ON_CPU, c->a[HC_ON_CPU].xn, c->a[HC_ON_GPU].xn, ebytes))
        return -1;

    /* Score -> select: the rows each share computes. */
    const int dense = hp->sparse == HC_SPARSE_OFF || hc_hooks_need_dense(c);
    if (!dense && gpu_selects(c, l))
        return gpu_layer_ffn(c, l, il, &s[HC_ON_GPU], n);
    if (!dense && score_neurons(c, l, s, n))
        return -1;
    if (select_rows(c, l, s, n, dense) || hc_hook_rows_chosen(c, l, il, n))
        return -1;

    /* The shares.  The GPU's rows are queued and started first, so they run
     * while the CPU computes its own; the two outputs then meet in a fixed
     * order (residual += this device's share, then += the other's partial). */
    const int gate_ready = !dense && hp->sparse == HC_SPARSE_ORACLE;
    for (int pass = 0; pass < 2; pass++) {
        const share *sh = &s[pass == 0 ? HC_ON_GPU : HC_ON_CPU];
        hc_ref y;
        if (sh->k == 0)
            continue;
        if (share_h(c, l, sh, n, gate_ready) || hc_hook_h_ready(c, il, n))
            return -1;
        if (share_target(c, sh, n, &y) || share_down(c, l, sh, n, y))
            return -1;
        if (sh->on == HC_ON_GPU && hc_dev_flush(&c->gpu))
            return -1;
    }
    /* Merge. */
    if (s[other].k > 0 &&
        (hc_cross(c, other, c->a[other].part, c->a[X].o, ebytes) ||
         hc_dev_binary(hc_ctx_dev(c, X), HC_BINARY_ADD, c->a[X].x, c->a[X].o, c->a[X].x,
                       (int64_t)n * hp->n_embd)))
        return -1;
    return 0;
}

int hc_exec_sparse_ffn(hc_context *c, const hc_layer *l, int il)
{
    /* With x on the CPU, the CPU's ops here (predictor, lists, its share)
     * need not wait for the GPU's upload of xn (exec/moves.h): they read
     * xn and write none of the memory an upload may still read (the only
     * one in flight is of xn: the uploads before this layer were waited
     * for by the download that brought x here, or by the CPU's ops since). */
    c->cpu.reader_deferred = c->x_on == HC_ON_CPU;
    const int rc = sparse_ffn(c, l, il);
    c->cpu.reader_deferred = 0;
    return rc;
}
