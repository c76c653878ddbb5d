/* Context lifetime (its streams, buffers and staging), hc_context_eval's
 * batching and overflow checks, and the statistics getters. */
#include "exec/context.h"

#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/log.h"

#define F32 sizeof(float)

hc_context_params hc_context_default_params(void)
{
    hc_context_params p = {sizeof p, 0, 64, 0, 0, 0};
    return p;
}

static int alloc_kv(hc_context *c)
{
    const hc_hparams *hp = &c->m->hp;
    const uint64_t bytes = hc_kv_layer_bytes(hp, c->n_ctx);
    c->k_cache = calloc((size_t)hp->n_layer, sizeof *c->k_cache);
    c->v_cache = calloc((size_t)hp->n_layer, sizeof *c->v_cache);
    if (!c->k_cache || !c->v_cache) {
        hc_set_error("out of memory for the KV cache table");
        return -1;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        hc_dev *d = c->m->layers[il].attn_gpu ? &c->gpu : &c->cpu;
        if (hc_dev_alloc(d, bytes, &c->k_cache[il]) || hc_dev_alloc(d, bytes, &c->v_cache[il]))
            return -1;
    }
    return 0;
}

hc_context *hc_context_new(hc_model *m, const hc_context_params *params)
{
    hc_context_params p = hc_context_default_params();
    if (params) {
        if (params->size == 0) {
            hc_set_error("hc_context_new: params.size is 0 (start from "
                         "hc_context_default_params())");
            return NULL;
        }
        memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
        p.size = sizeof p;
    }
    hc_context *c = calloc(1, sizeof *c);
    if (!c) {
        hc_set_error("out of memory");
        return NULL;
    }
    c->m = m;
    c->n_ctx = p.n_ctx > 0 ? p.n_ctx : m->hp.n_ctx_train;
    c->n_batch = p.n_batch > 0 ? p.n_batch : 64;
    if (c->n_batch > c->n_ctx)
        c->n_batch = c->n_ctx;
    c->sparse_check = p.sparse_check && m->hp.sparse == HC_SPARSE_PREDICTOR;
    c->no_graphs = p.no_graphs;
    c->logit_cap = p.logits_all ? c->n_batch : 1;
    c->logit_rows = 1;
    const size_t bff = (size_t)c->n_batch * m->hp.n_ff;
    c->host_true = malloc(bff * F32);
    c->host_mark = malloc((size_t)m->hp.n_ff);
    c->acc = calloc((size_t)m->hp.n_layer, sizeof *c->acc);
    c->counted = calloc((size_t)m->hp.n_layer, sizeof *c->counted);
    c->graph_counted = calloc((size_t)m->hp.n_layer, sizeof *c->graph_counted);
    c->graph_acc = calloc((size_t)m->hp.n_layer, sizeof *c->graph_acc);
    if (!c->host_true || !c->host_mark || !c->acc || !c->counted || !c->graph_counted ||
        !c->graph_acc) {
        hc_set_error("out of memory");
        goto fail;
    }
    /* Streams of its own on the model's devices: nothing a pass touches is
     * shared with another context. */
    if (hc_dev_open_stream(&c->cpu, &m->cpu))
        goto fail;
    if (m->has_gpu) {
        /* Its events time its work and mark its reads of the CPU's
         * memory, which the CPU device waits for (exec/moves.h). */
        if (hc_dev_open_stream(&c->gpu, &m->gpu) ||
            hc_dev_events_open(&c->gpu, HC_DEV_TIME_SPANS))
            goto fail;
        c->gpu.host = &c->cpu;
        c->cpu.reader = &c->gpu;
    }
    c->cpu.timing = HC_DEV_TIME_OPS;
    /* The vectors that cross every layer or token, in memory the GPU
     * copies without staging (page-locked, where its plugin has it). */
    hc_dev *pin = m->has_gpu ? &c->gpu : &c->cpu;
    const uint64_t B = (uint64_t)c->n_batch;
    if (!(c->host_x = hc_dev_host_alloc(pin, B * m->hp.n_embd * F32)) ||
        !(c->host_zero = hc_dev_host_alloc(pin, B * m->hp.n_embd * F32)) ||
        !(c->host_gate = hc_dev_host_alloc(pin, bff * F32)) ||
        !(c->host_gidx = hc_dev_host_alloc(pin, (uint64_t)m->hp.n_ff * 4)) ||
        !(c->host_pos = hc_dev_host_alloc(pin, B * 4)) ||
        !(c->host_plog = hc_dev_host_alloc(pin, bff * F32)) ||
        !(c->host_idx = hc_dev_host_alloc(pin, (uint64_t)m->hp.n_ff * 4)) ||
        !(c->host_count = hc_dev_host_alloc(pin, (uint64_t)m->hp.n_layer * 4)) ||
        !(c->host_logits =
              hc_dev_host_alloc(pin, (uint64_t)c->logit_cap * m->hp.n_vocab * F32)))
        goto fail;
    if (hc_acts_alloc(&c->cpu, &m->hp, c->n_batch, c->logit_cap, &c->a[HC_ON_CPU]) ||
        (m->has_gpu &&
         hc_acts_alloc(&c->gpu, &m->hp, c->n_batch, c->logit_cap, &c->a[HC_ON_GPU])) ||
        alloc_kv(c))
        goto fail;
    /* The run's waits and busy times are the passes' (setting up waited
     * for the uploads). */
    hc_context_reset(c);
    return c;
fail:
    hc_context_free(c);
    return NULL;
}

void hc_context_free(hc_context *c)
{
    if (!c)
        return;
    for (int il = 0; il < c->m->hp.n_layer; il++) {
        hc_dev *d = c->m->layers[il].attn_gpu ? &c->gpu : &c->cpu;
        if (c->k_cache)
            hc_dev_free(d, c->k_cache[il]);
        if (c->v_cache)
            hc_dev_free(d, c->v_cache[il]);
    }
    free(c->k_cache);
    free(c->v_cache);
    hc_dev_free(&c->cpu, c->a[HC_ON_CPU].buf);
    if (c->m->has_gpu) {
        hc_dev_graph_free(&c->gpu, c->graph);
        hc_dev_free(&c->gpu, c->a[HC_ON_GPU].buf);
    }
    /* Pinned memory goes back to the device that gave it, while it is open
     * (a stream that never opened has no ops: nothing was given). */
    hc_dev *pin = c->m->has_gpu ? &c->gpu : &c->cpu;
    if (pin->ops) {
        void *host[] = {c->host_x,   c->host_zero,  c->host_gate,  c->host_gidx, c->host_pos,
                        c->host_plog, c->host_idx,  c->host_count, c->host_logits};
        for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
            hc_dev_host_free(pin, host[i]);
    }
    /* The GPU's fallback scratch lives on the CPU device: close it first. */
    hc_dev_close(&c->gpu);
    hc_dev_close(&c->cpu);
    free(c->host_true);
    free(c->host_mark);
    free(c->acc);
    free(c->counted);
    free(c->graph_counted);
    free(c->graph_acc);
    free(c->host_p);
    free(c->host_h);
    free(c);
}

int hc_context_n_ctx(const hc_context *c)
{
    return c->n_ctx;
}

int hc_context_n_past(const hc_context *c)
{
    return c->n_past;
}

void hc_context_reset(hc_context *c)
{
    c->n_past = 0;
    memset(c->acc, 0, (size_t)c->m->hp.n_layer * sizeof *c->acc);
    memset(&c->run, 0, sizeof c->run);
    c->gpu.fallback_calls = 0;
    c->gpu.syncs = 0;
    c->gpu.busy_ns = c->cpu.busy_ns = 0;
    c->gpu.busy_host_clock = 0;
}

void hc_context_run_stats_get(const hc_context *c, hc_context_run_stats *out)
{
    *out = c->run;
    out->fallback_calls = c->m->has_gpu ? c->gpu.fallback_calls : 0;
    out->gpu_syncs = c->m->has_gpu ? c->gpu.syncs : 0;
    out->gpu_busy_ns = c->m->has_gpu ? c->gpu.busy_ns : 0;
    out->cpu_busy_ns = c->cpu.busy_ns;
    out->gpu_busy_host_clock = c->m->has_gpu && c->gpu.busy_host_clock;
}

int hc_context_sparse_stats(const hc_context *c, int layer, hc_layer_sparse_stats *out)
{
    if (layer < 0 || layer >= c->m->hp.n_layer) {
        hc_set_error("no layer %d (the model has %d)", layer, c->m->hp.n_layer);
        return -1;
    }
    const struct hc_sparse_layer_acc *a = &c->acc[layer];
    memset(out, 0, sizeof *out);
    out->forwards = a->forwards;
    out->computed_frac = a->forwards ? a->computed / (double)a->forwards : 0.0;
    out->checked = a->checked_tokens > 0;
    if (out->checked) {
        out->recall = a->n_true ? (double)a->n_pred_true / (double)a->n_true : 1.0;
        out->precision = a->n_pred ? (double)a->n_pred_true / (double)a->n_pred : 1.0;
        out->true_frac = (double)a->n_true / ((double)a->checked_tokens * c->m->hp.n_ff);
    }
    return 0;
}

int hc_context_set_ffn_observer(hc_context *c, hc_ffn_observer fn, void *user)
{
    const hc_hparams *hp = &c->m->hp;
    if (fn && c->m->has_gpu) {
        hc_set_error("the FFN observer (profiling, predictor training) runs on the CPU only: "
                     "load the model with device \"cpu\"");
        return -1;
    }
    if (fn && !c->host_p) {
        c->host_p = malloc((size_t)c->n_batch * hp->n_embd * F32);
        c->host_h = malloc((size_t)c->n_batch * hp->n_ff * F32);
        if (!c->host_p || !c->host_h) {
            free(c->host_p);
            free(c->host_h);
            c->host_p = c->host_h = NULL;
            hc_set_error("out of memory for the FFN observer's buffers");
            return -1;
        }
    }
    c->observer = fn;
    c->observer_user = user;
    return 0;
}

/* n tokens in passes of n_batch; the last pass's logits (one row, or with
 * `all` every token's, each pass's rows to logits at its first token). */
static int eval_tokens(hc_context *c, const int32_t *tokens, int n, float *logits, int all)
{
    if (n <= 0) {
        hc_set_error("nothing to evaluate (0 tokens)");
        return -1;
    }
    if (n > c->n_ctx - c->n_past) {
        hc_set_error("context overflow: %d tokens already in a %d-token context, %d more do not "
                     "fit (raise -c)",
                     c->n_past, c->n_ctx, n);
        return -1;
    }
    for (int done = 0; done < n;) {
        int chunk = n - done < c->n_batch ? n - done : c->n_batch;
        int last = done + chunk == n;
        float *out = !logits ? NULL
                     : all   ? logits + (size_t)done * c->m->hp.n_vocab
                     : last  ? logits
                             : NULL;
        c->logit_rows = all ? chunk : 1;
        const double t0 = hc_time_s();
        const int rc = hc_forward(c, tokens + done, chunk, out);
        c->logit_rows = 1;
        if (rc)
            return -1;
        c->run.wall_ns += (uint64_t)((hc_time_s() - t0) * 1e9);
        c->n_past += chunk;
        c->run.tokens += chunk;
        c->run.passes++;
        done += chunk;
    }
    return 0;
}

int hc_context_eval(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    return eval_tokens(c, tokens, n, logits, 0);
}

int hc_context_eval_all(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    if (c->logit_cap < c->n_batch) {
        hc_set_error("hc_context_eval_all: the context was made without logits_all "
                     "(hc_context_params)");
        return -1;
    }
    return eval_tokens(c, tokens, n, logits, 1);
}
