/*
 * Putting a model's GPU share on the GPU: ask the placement solver (or a
 * saved PowerInfer gpuidx) what goes there, upload it, and build the maps
 * the hybrid FFN uses (neuron -> compact GPU row, the CPU's neuron list).
 *
 * Two deliberate departures from PowerInfer's fill order, both because of
 * what the ops read:
 *  - a layer's KV cache rides with its attention (one item): the attention
 *    op reads the cache, so splitting them would move the cache per token;
 *  - norm weights are tiny (n_embd floats) and are copied to the GPU for
 *    every layer, so the norm runs wherever the residual is; they are
 *    still counted in the bytes.
 * A plain GGUF (down not transposed) cannot split one layer's FFN by
 * neuron: a layer gets all its neurons on the GPU or none.  --split layers
 * (hc_plan_layers) places whole layers in order instead of solving.
 *
 * Out of GPU memory while uploading: everything is freed, the budget
 * shrinks to 3/4 of what was placed before the failure and the plan is
 * solved again, down to nothing on the GPU; if even that plan's norm
 * weights do not fit, the GPU is closed and the model runs on the CPU
 * alone (has_gpu 0: contexts allocate nothing there).
 */
#include "runtime/model.h"

#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exec/acts.h"
#include "runtime/placement_stats.h"
#include "util/log.h"

#define MiB (1024.0 * 1024.0)
#define BUDGET_MARGIN (256u << 20) /* PowerInfer's default: free VRAM - 256 MiB */

/* The solver's view of the model: sizes in real bytes, and frequencies. */
static int build_input(hc_model *m, const hc_model_params *p, hc_place_in *in,
                       hc_place_layer_in **layers, float **freq)
{
    const hc_hparams *hp = &m->hp;
    const int n_ctx = p->n_ctx > 0 ? p->n_ctx : hp->n_ctx_train;
    const uint64_t kv = 2u * hc_kv_layer_bytes(hp, n_ctx); /* K and V */
    const int predicting = hp->sparse == HC_SPARSE_PREDICTOR;

    *freq = NULL;
    if (hc_place_freq_from_gguf(m->gguf, hp->n_layer, hp->n_ff, freq))
        return -1;
    if (!*freq) {
        /* PowerInfer's layout: an activation/ folder beside the model. */
        char dir[1100];
        struct stat st;
        char *copy = strdup(m->path);
        if (!copy) {
            hc_set_error("out of memory");
            return -1;
        }
        snprintf(dir, sizeof dir, "%s/activation", dirname(copy));
        free(copy);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (hc_place_freq_from_activation_dir(dir, hp->n_layer, hp->n_ff, freq))
                return -1;
            HC_INFO("placement: activation statistics from %s", dir);
        }
    }
    *layers = calloc((size_t)hp->n_layer, sizeof **layers);
    if (!*layers) {
        hc_set_error("out of memory");
        return -1;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const hc_layer *l = &m->layers[il];
        hc_place_layer_in *li = &(*layers)[il];
        li->attn_bytes = hc_layer_block_bytes(m, l, HC_BLOCK_ATTN, 1) + kv;
        li->pred_bytes = predicting ? hc_layer_block_bytes(m, l, HC_BLOCK_PRED, 1) : 0;
        const uint64_t ffn = hc_layer_block_bytes(m, l, HC_BLOCK_FFN, 1);
        const uint64_t ffn_matrices = hc_layer_block_bytes(m, l, HC_BLOCK_FFN, 0);
        li->ffn_norm_bytes = ffn - ffn_matrices;
        li->kv_bytes = 0; /* counted with the attention */
        li->neuron_bytes = ffn_matrices / (uint64_t)hp->n_ff;
        li->freq = *freq ? *freq + (size_t)il * (size_t)hp->n_ff : NULL;
    }
    memset(in, 0, sizeof *in);
    in->n_layer = hp->n_layer;
    in->n_ff = hp->n_ff;
    in->output_bytes = m->output_norm.bytes + m->output.bytes;
    in->layers = *layers;
    return 0;
}

/* ---- uploads ------------------------------------------------------------- */

static int gpu_put(hc_model *m, const void *host, uint64_t bytes, hc_ref *out)
{
    hc_buffer *b;
    hc_buffer **nb = realloc(m->gbufs, (size_t)(m->n_gbufs + 1) * sizeof *nb);
    if (!nb) {
        hc_set_error("out of memory");
        return -1;
    }
    m->gbufs = nb;
    if (hc_dev_alloc(&m->gpu, bytes, &b))
        return -1;
    m->gbufs[m->n_gbufs++] = b;
    m->gpu_weight_bytes += bytes;
    *out = (hc_ref){b, 0};
    return hc_dev_upload(&m->gpu, *out, host, bytes);
}

static int put_weight(hc_model *m, hc_weight *w)
{
    if (w->gref.buf)
        return 0;
    return gpu_put(m, w->host, w->bytes, &w->gref);
}

/* Rows `ids` of w, packed in that order, onto the GPU.  The host copy is
 * freed only after the upload has read it. */
static int put_rows(hc_model *m, const hc_weight *w, const int32_t *ids, int64_t n, hc_ref *out)
{
    const uint64_t rb = hc_type_row_size(w->type, w->cols);
    uint8_t *tmp = malloc((size_t)(rb * (uint64_t)n));
    if (!tmp) {
        hc_set_error("out of memory gathering %lld rows of %s", (long long)n, w->name);
        return -1;
    }
    for (int64_t j = 0; j < n; j++)
        memcpy(tmp + (size_t)j * rb, (const uint8_t *)w->host + (size_t)ids[j] * rb, (size_t)rb);
    int rc = gpu_put(m, tmp, rb * (uint64_t)n, out) || hc_dev_sync(&m->gpu);
    free(tmp);
    return rc ? -1 : 0;
}

/* Layer l's present tensors onto the GPU, in table order: its vectors (the
 * norms of every block), or the matrices of one block. */
static int put_tensors(hc_model *m, hc_layer *l, int vectors, hc_block block)
{
    for (int i = 0; i < m->arch->n_layer_tensors; i++) {
        const hc_tensor_spec *t = &m->arch->layer_tensors[i];
        const int is_vector = t->rows == HC_DIM_ONE;
        if ((vectors ? is_vector : t->block == block && !is_vector) &&
            hc_weight_present(&l->w[t->id]) && put_weight(m, &l->w[t->id]))
            return -1;
    }
    return 0;
}

static int cpu_list(hc_model *m, const int32_t *ids, int64_t n, hc_ref *out)
{
    hc_buffer *b;
    if (hc_dev_alloc(&m->cpu, (uint64_t)(n > 0 ? n : 1) * sizeof(int32_t), &b) ||
        hc_model_add_buffer(m, b))
        return -1;
    *out = (hc_ref){b, 0};
    return n > 0 ? hc_dev_upload(&m->cpu, *out, ids, (uint64_t)n * sizeof(int32_t)) : 0;
}

static int place_layer(hc_model *m, int il, const hc_place_layer *pl)
{
    const hc_hparams *hp = &m->hp;
    hc_layer *l = &m->layers[il];
    const int64_t ff = hp->n_ff;
    const int transposed = hc_weight_present(&l->ffn_down_t);

    l->attn_gpu = pl->attn;
    l->pred_gpu = pl->pred && l->pred_rank > 0;
    l->n_hot = pl->n_hot;
    if (!transposed && l->n_hot != ff)
        l->n_hot = 0; /* a dense down cannot be split by neuron */
    l->hot = l->n_hot ? pl->hot : NULL;
    l->gpu_row = malloc((size_t)ff * sizeof *l->gpu_row);
    int32_t *cold = malloc((size_t)ff * sizeof *cold);
    int rc = -1;
    if (!l->gpu_row || !cold) {
        hc_set_error("out of memory");
        goto out;
    }
    for (int64_t r = 0; r < ff; r++)
        l->gpu_row[r] = -1;
    for (int64_t j = 0; j < l->n_hot; j++)
        l->gpu_row[l->hot[j]] = (int32_t)j;
    l->n_cold = 0;
    for (int64_t r = 0; r < ff; r++)
        if (l->gpu_row[r] < 0)
            cold[l->n_cold++] = (int32_t)r;
    if (cpu_list(m, cold, l->n_cold, &l->cold_idx) || hc_dev_sync(&m->cpu))
        goto out;
    /* Norms everywhere; the attention's and the predictor's matrices where
     * the plan puts them; the FFN's hot rows below. */
    if (put_tensors(m, l, 1, HC_BLOCK_MODEL) ||
        (l->attn_gpu && put_tensors(m, l, 0, HC_BLOCK_ATTN)) ||
        (l->pred_gpu && put_tensors(m, l, 0, HC_BLOCK_PRED)))
        goto out;
    if (l->n_hot == ff) {
        hc_weight *down = transposed ? &l->ffn_down_t : &l->ffn_down;
        if (put_weight(m, &l->ffn_gate) || put_weight(m, &l->ffn_up) || put_weight(m, down))
            goto out;
        l->hot_gate = l->ffn_gate.gref;
        l->hot_up = l->ffn_up.gref;
        l->hot_down = down->gref;
    } else if (l->n_hot > 0) {
        if (put_rows(m, &l->ffn_gate, l->hot, l->n_hot, &l->hot_gate) ||
            put_rows(m, &l->ffn_up, l->hot, l->n_hot, &l->hot_up) ||
            put_rows(m, &l->ffn_down_t, l->hot, l->n_hot, &l->hot_down))
            goto out;
    }
    rc = 0;
out:
    free(cold);
    return rc;
}

static int place_plan(hc_model *m)
{
    for (int il = 0; il < m->hp.n_layer; il++) {
        /* The KV cache was counted with its attention, and goes with it. */
        m->plan->layers[il].kv = m->plan->layers[il].attn;
        if (place_layer(m, il, &m->plan->layers[il]))
            return -1;
    }
    m->output_gpu = m->plan->output;
    if (put_weight(m, &m->output_norm) || (m->output_gpu && put_weight(m, &m->output)))
        return -1;
    return hc_dev_sync(&m->gpu);
}

/* Contexts will want the KV cache of the GPU's attention layers and one
 * activation buffer there (for the default batch of 64): allocate them once
 * now, so that a GPU that cannot hold them shrinks the plan here instead of
 * failing every context later.  0, or -1 with m->gpu.last_status set. */
static int reserve_contexts(hc_model *m, int n_ctx)
{
    const hc_hparams *hp = &m->hp;
    const int n_batch = n_ctx < 64 ? n_ctx : 64;
    const uint64_t kv = hc_kv_layer_bytes(hp, n_ctx);
    hc_buffer *acts = NULL, **kvb = calloc(2 * (size_t)hp->n_layer, sizeof *kvb);
    int rc = -1;
    if (!kvb) {
        hc_set_error("out of memory");
        goto out;
    }
    if (hc_dev_alloc(&m->gpu, hc_acts_layout(hp, n_batch, 1, NULL), &acts))
        goto out;
    for (int il = 0; il < hp->n_layer; il++)
        if (m->layers[il].attn_gpu && (hc_dev_alloc(&m->gpu, kv, &kvb[2 * il]) ||
                                       hc_dev_alloc(&m->gpu, kv, &kvb[2 * il + 1])))
            goto out;
    rc = 0;
out:
    for (int i = 0; kvb && i < 2 * hp->n_layer; i++)
        hc_dev_free(&m->gpu, kvb[i]);
    free(kvb);
    hc_dev_free(&m->gpu, acts);
    return rc;
}

static void clear_gref(hc_weight *w)
{
    w->gref = (hc_ref){NULL, 0};
}

void hc_model_free_gpu(hc_model *m)
{
    if (m->has_gpu)
        for (int i = 0; i < m->n_gbufs; i++)
            hc_dev_free(&m->gpu, m->gbufs[i]);
    free(m->gbufs);
    m->gbufs = NULL;
    m->n_gbufs = 0;
    m->gpu_weight_bytes = 0;
    for (int i = 0; i < HC_M_COUNT; i++)
        clear_gref(&m->top[i]);
    for (int il = 0; m->layers && il < m->hp.n_layer; il++) {
        hc_layer *l = &m->layers[il];
        for (int i = 0; i < HC_T_LAYER_COUNT; i++)
            clear_gref(&l->w[i]);
        free(l->gpu_row);
        l->gpu_row = NULL;
        l->hot = NULL;
        l->n_hot = 0;
        l->attn_gpu = l->pred_gpu = 0;
    }
    m->output_gpu = 0;
    hc_plan_free(m->plan);
    m->plan = NULL;
}

/* ---- the plan ------------------------------------------------------------- */

/* How a saved split was used, for the run's "gpu index:" line.  Capacities
 * in bytes: reuse needs them equal, or a fresh solve that gives the same
 * split, so the numbers show why it was not. */
static void note_outcome(hc_model *m, const char *path, const hc_gpuidx_load *how)
{
    char *note = m->gpu_index_note;
    const size_t n = sizeof m->gpu_index_note;
    switch (how->outcome) {
    case HC_GPUIDX_REUSED:
        snprintf(note, n, "neuron split reused from %s (solved for the %" PRIu64
                 " bytes of hot-neuron room this budget leaves)",
                 path, how->capacity);
        break;
    case HC_GPUIDX_SAME_SPLIT:
        snprintf(note, n, "neuron split reused from %s (solved for %" PRIu64 " bytes of "
                 "hot-neuron room; the %" PRIu64 " this budget leaves give the same split)",
                 path, how->saved_capacity, how->capacity);
        break;
    case HC_GPUIDX_OTHER_CAPACITY:
        snprintf(note, n, "re-solved: %s was solved for %" PRIu64 " bytes of hot neurons, this "
                 "budget leaves %" PRIu64 "; replacing it",
                 path, how->saved_capacity, how->capacity);
        break;
    default:
        snprintf(note, n, "re-solved: the GPU neurons of %s take %" PRIu64 " bytes, more than "
                 "the %" PRIu64 " it was solved for; replacing it",
                 path, how->need, how->capacity);
        break;
    }
}

/* A fresh plan of the split asked for (hc_split_mode; AUTO is NEURONS). */
static int plan_for(int split, const hc_place_in *in, hc_plan **out)
{
    return split == HC_SPLIT_LAYERS ? hc_plan_layers(in, out) : hc_plan_solve(in, out);
}

static int solve(hc_model *m, const hc_model_params *p, hc_place_in *in, const char *idx_path)
{
    hc_gpuidx_load how;
    struct stat st;
    int save = p->gpu_index != HC_GPU_INDEX_DISABLE;
    if (p->gpu_index == HC_GPU_INDEX_USE && stat(idx_path, &st) == 0) {
        if (hc_plan_load_gpuidx(idx_path, in, &m->plan, &how) == 0) {
            note_outcome(m, idx_path, &how);
            save = how.outcome != HC_GPUIDX_REUSED && how.outcome != HC_GPUIDX_SAME_SPLIT;
        } else {
            /* A file we cannot use (corrupt, another model's, not a gpuidx)
             * must not stop this run or every later one: solve without it
             * and leave it as it is (it may be someone's), saying so. */
            char why[1024];
            snprintf(why, sizeof why, "%s", hc_last_error());
            if (hc_plan_solve(in, &m->plan))
                return -1;
            HC_WARN("%s; not using it: the neuron split is solved afresh and the file left as "
                    "it is (--reset-gpu-index replaces it)",
                    why);
            snprintf(m->gpu_index_note, sizeof m->gpu_index_note,
                     "solved; ignored %.1000s (left as it is; --reset-gpu-index replaces it)",
                     why);
            save = 0;
        }
    } else if (hc_plan_solve(in, &m->plan)) {
        return -1;
    } else {
        snprintf(m->gpu_index_note, sizeof m->gpu_index_note, "solved%s%s",
                 p->gpu_index == HC_GPU_INDEX_DISABLE ? " (gpu index disabled)" : ", saved to ",
                 p->gpu_index == HC_GPU_INDEX_DISABLE ? "" : idx_path);
    }
    if (save && hc_plan_save_gpuidx(m->plan, idx_path)) {
        /* A read-only model folder costs the cache, not the run. */
        HC_WARN("could not save the GPU index: %s", hc_last_error());
        snprintf(m->gpu_index_note, sizeof m->gpu_index_note, "solved (not saved: %.200s)",
                 hc_last_error());
    }
    return 0;
}

int hc_model_place_gpu(hc_model *m, const hc_model_params *p)
{
    hc_place_in in;
    hc_place_layer_in *layers = NULL;
    float *freq = NULL;
    char idx_path[1100];
    int rc = -1;

    if (build_input(m, p, &in, &layers, &freq))
        goto out;
    if (p->vram_budget >= 0) {
        in.budget = (uint64_t)p->vram_budget;
    } else {
        const uint64_t free_mem = m->gpu.info.mem_free;
        in.budget = free_mem > BUDGET_MARGIN ? free_mem - BUDGET_MARGIN : 0;
    }
    if (p->gpu_index_path)
        snprintf(idx_path, sizeof idx_path, "%s", p->gpu_index_path);
    else
        snprintf(idx_path, sizeof idx_path, "%s.generated.gpuidx", m->path);
    /* The split: a neuron split needs an FFN that splits by neuron (down
     * stored transposed, as PowerInfer files do); a plain GGUF's layers
     * go whole, which AUTO picks for it and an explicit `neurons` is told.
     * The saved split is a neuron split: only those files have one worth
     * caching. */
    const int by_neuron = hc_weight_present(&m->layers[0].ffn_down_t);
    hc_model_params pp = *p;
    if (pp.split == HC_SPLIT_AUTO)
        pp.split = by_neuron ? HC_SPLIT_NEURONS : HC_SPLIT_LAYERS;
    else if (pp.split == HC_SPLIT_NEURONS && !by_neuron) {
        HC_WARN("%s: a neuron split needs down_t (a PowerInfer file); this plain GGUF's layers "
                "go to the GPU whole (--split layers)",
                m->path);
        pp.split = HC_SPLIT_LAYERS;
    }
    if (!by_neuron)
        pp.gpu_index = HC_GPU_INDEX_DISABLE;
    p = &pp;
    if (p->split == HC_SPLIT_LAYERS) {
        /* Whole layers need no solve, and the file holds a neuron split:
         * applying it here would split layers, overwriting it would lose
         * the next neuron run's cache.  So it is left alone. */
        if (hc_plan_layers(&in, &m->plan))
            goto out;
        snprintf(m->gpu_index_note, sizeof m->gpu_index_note,
                 "whole layers (--split layers): no neuron split, %s neither read nor written",
                 idx_path);
    } else if (solve(m, p, &in, idx_path)) {
        goto out;
    }
    int nothing_placed = 0; /* the plan that failed put only norms there */
    const int n_ctx = p->n_ctx > 0 ? p->n_ctx : m->hp.n_ctx_train;
    for (;;) {
        if (place_plan(m) == 0 && reserve_contexts(m, n_ctx) == 0)
            break;
        if (m->gpu.last_status != HC_E_NOMEM)
            goto out;
        /* Out of device memory: a smaller hot set, then nothing.  What
         * was placed before the failure is what the device could hold. */
        char why[256];
        snprintf(why, sizeof why, "%s", hc_last_error());
        const uint64_t was = in.budget;
        const uint64_t held = m->gpu_weight_bytes < was ? m->gpu_weight_bytes : was;
        in.budget = held / 4 * 3;
        hc_model_free_gpu(m);
        m->gpu.last_status = HC_OK;
        if (nothing_placed) {
            /* Not even the norm weights fit: the GPU is given up, so the
             * contexts do not ask it for activations either. */
            HC_WARN("%s: out of memory for its norm weights alone; not using it", m->gpu.label);
            hc_dev_close(&m->gpu);
            m->has_gpu = 0;
            if (hc_plan_all(&in, 0, &m->plan))
                goto out;
            m->plan->whole_layers = p->split == HC_SPLIT_LAYERS;
            snprintf(m->gpu_index_note, sizeof m->gpu_index_note,
                     "the GPU had no memory: everything on the CPU, the GPU unused");
            break;
        }
        HC_WARN("%s: out of memory placing %.1f MiB (%s); retrying with a budget of %.1f MiB",
                m->gpu.label, (double)was / MiB, why, (double)in.budget / MiB);
        if (in.budget < (1u << 20)) {
            nothing_placed = 1;
            if (hc_plan_all(&in, 0, &m->plan))
                goto out;
            m->plan->whole_layers = p->split == HC_SPLIT_LAYERS;
            snprintf(m->gpu_index_note, sizeof m->gpu_index_note,
                     "the GPU had no memory: everything on the CPU");
        } else {
            if (plan_for(p->split, &in, &m->plan))
                goto out;
            snprintf(m->gpu_index_note, sizeof m->gpu_index_note,
                     p->split == HC_SPLIT_LAYERS
                         ? "whole layers for %.1f MiB after running out of GPU memory"
                         : "re-solved for %.1f MiB after running out of GPU memory (not saved)",
                     (double)in.budget / MiB);
        }
    }
    rc = 0;
out:
    free(layers);
    free(freq);
    return rc;
}
