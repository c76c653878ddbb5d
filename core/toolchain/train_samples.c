/*
 * Predictor training data: (p, fires) pairs per layer, gathered with the FFN
 * observer while the model reads a corpus (see train_predictor.h).
 */
#include <stdlib.h>
#include <string.h>

#include "hotcold/toolchain.h"
#include "util/log.h"

uint64_t hc_ffn_samples_bytes(int n_layer, int n_embd, int n_ff, int64_t cap)
{
    uint64_t words = ((uint64_t)n_ff + 63) / 64;
    return (uint64_t)n_layer * (uint64_t)cap * ((uint64_t)n_embd * 4u + words * 8u);
}

int hc_ffn_samples_init(hc_ffn_samples *s, int n_layer, int n_embd, int n_ff, int64_t cap)
{
    memset(s, 0, sizeof *s);
    if (n_layer <= 0 || n_embd <= 0 || n_ff <= 0 || cap <= 0) {
        hc_set_error("samples: bad shape %d layers, n_embd %d, n_ff %d, %lld samples", n_layer,
                     n_embd, n_ff, (long long)cap);
        return -1;
    }
    s->n_layer = n_layer;
    s->n_embd = n_embd;
    s->n_ff = n_ff;
    s->words = (n_ff + 63) / 64;
    s->cap = cap;
    s->p = malloc((size_t)n_layer * (size_t)cap * (size_t)n_embd * sizeof *s->p);
    s->fires = calloc((size_t)n_layer * (size_t)cap * (size_t)s->words, sizeof *s->fires);
    if (!s->p || !s->fires) {
        hc_set_error("samples: out of memory for %lld samples per layer (%.0f MiB)",
                     (long long)cap,
                     (double)hc_ffn_samples_bytes(n_layer, n_embd, n_ff, cap) / 1048576.0);
        hc_ffn_samples_free(s);
        return -1;
    }
    return 0;
}

void hc_ffn_samples_free(hc_ffn_samples *s)
{
    if (!s)
        return;
    free(s->p);
    free(s->fires);
    memset(s, 0, sizeof *s);
}

typedef struct collector {
    hc_ffn_samples *s;
    int64_t base; /* sample index of this batch's first token */
} collector;

static void collect_observer(void *user, const hc_ffn_observation *obs)
{
    collector *c = user;
    hc_ffn_samples *s = c->s;
    for (int t = 0; t < obs->n_tok; t++) {
        int64_t i = c->base + t;
        if (i >= s->cap)
            break;
        memcpy((float *)hc_ffn_sample_p(s, obs->layer, i), obs->p + (size_t)t * (size_t)s->n_embd,
               (size_t)s->n_embd * sizeof(float));
        uint64_t *bits = (uint64_t *)hc_ffn_sample_fires(s, obs->layer, i);
        memset(bits, 0, (size_t)s->words * sizeof *bits);
        const float *h = obs->h + (size_t)t * (size_t)s->n_ff;
        for (int r = 0; r < s->n_ff; r++)
            if (h[r] != 0.0f)
                bits[r >> 6] |= 1ull << (r & 63);
    }
    /* The last layer closes the batch: its tokens are now complete samples. */
    if (obs->layer == s->n_layer - 1) {
        c->base += obs->n_tok;
        s->n = c->base < s->cap ? c->base : s->cap;
    }
}

int hc_ffn_samples_collect(hc_model *m, const hc_token_windows *w, hc_progress_fn progress,
                           void *user, hc_ffn_samples *s)
{
    hc_model_desc d;
    hc_context *ctx = NULL;
    int rc = -1;
    hc_model_describe(m, &d);
    if (d.n_layer != s->n_layer || d.n_embd != s->n_embd || d.n_ff != s->n_ff) {
        hc_set_error("samples: sized for %d layers, n_embd %d, n_ff %d; the model has %d, %d, "
                     "%d",
                     s->n_layer, s->n_embd, s->n_ff, d.n_layer, d.n_embd, d.n_ff);
        return -1;
    }
    collector col = {s, s->n};
    ctx = hc_token_windows_context(m, w, collect_observer, &col);
    if (!ctx)
        goto out;
    int64_t want = s->cap - s->n < w->n_tokens ? s->cap - s->n : w->n_tokens, done = 0;
    for (int i = 0; i < w->n && s->n < s->cap; i++) {
        int n = (int)(w->start[i + 1] - w->start[i]);
        /* Only the tokens that still fit: a window's prefix sees the same
         * context as in the full window (attention is causal). */
        if (n > s->cap - s->n)
            n = (int)(s->cap - s->n);
        hc_context_reset(ctx);
        if (hc_context_eval(ctx, w->ids + w->start[i], n, NULL))
            goto out;
        done += n;
        if (progress)
            progress(user, done, want);
    }
    rc = 0;
out:
    hc_context_free(ctx);
    return rc;
}
