/*
 * The predictor trainer (see train_predictor.h for the method).
 *
 * Internal layout, chosen so every hot loop is an AXPY over a contiguous
 * row (vectorisable without reassociating sums, hence deterministic):
 *   w1t [E][H]  fc1 transposed        a[b]  = sum_e x[b][e] * w1t[e]
 *   w2t [H][F]  fc2 transposed        z[b]  = sum_h relu(a[b][h]) * w2t[h]
 * The one dot product (the gradient of the hidden layer) uses eight fixed
 * partial sums, again one fixed order.
 */
#include "hotcold/toolchain.h"
#include "util/clock.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

hc_train_params hc_train_default_params(void)
{
    hc_train_params p = {
        .size = sizeof p,
        .rank = 0,
        .min_rank = 16,
        .max_rank = 0,
        .epochs = 4,
        .batch = 64,
        .lr = 1e-2f,
        .pos_weight = 0.0f,
        .threshold = 0.0f,
        .target_recall = 0.95f,
        .select_frac = 0.1,
        .n_threads = 1,
        .seed = 1234,
    };
    return p;
}

/* ---- small numerics ------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float uniform_pm1(uint64_t *s)
{
    return (float)(splitmix64(s) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* The training step is compiled twice, for plain x86-64 and for AVX2, from
 * the same always-inlined loops.  No FMA is enabled in either, and every sum
 * has a fixed order, so both give bit-identical results: the machine's ISA
 * changes only the speed. */
#define HOT static inline __attribute__((always_inline))

HOT void axpy(float *restrict y, const float *restrict x, float a, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

HOT float dot(const float *restrict a, const float *restrict b, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * b[i + j];
    float tail = 0.0f;
    for (; i < n; i++)
        tail += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) +
           tail;
}

HOT int bit(const uint64_t *bits, int r)
{
    return (int)((bits[r >> 6] >> (r & 63)) & 1u);
}

/* ---- predictor objects ---------------------------------------------------- */
int hc_predictor_init(hc_predictor *pr, int n_layer, int n_embd, int n_ff)
{
    memset(pr, 0, sizeof *pr);
    if (n_layer <= 0 || n_embd <= 0 || n_ff <= 0) {
        hc_set_error("predictor: bad shape %d layers, n_embd %d, n_ff %d", n_layer, n_embd,
                     n_ff);
        return -1;
    }
    pr->layers = calloc((size_t)n_layer, sizeof *pr->layers);
    if (!pr->layers) {
        hc_set_error("predictor: out of memory");
        return -1;
    }
    pr->n_layer = n_layer;
    pr->n_embd = n_embd;
    pr->n_ff = n_ff;
    return 0;
}

void hc_predictor_free(hc_predictor *pr)
{
    if (!pr)
        return;
    for (int il = 0; pr->layers && il < pr->n_layer; il++) {
        free(pr->layers[il].fc1);
        free(pr->layers[il].fc2);
    }
    free(pr->layers);
    memset(pr, 0, sizeof *pr);
}

void hc_predictor_layer_counts(const hc_predictor_layer *l, int n_embd, int n_ff,
                               float threshold, const hc_ffn_samples *s, int layer,
                               int64_t begin, int64_t end, uint64_t *tp, uint64_t *pred,
                               uint64_t *truth)
{
    const int H = l->rank;
    float *a = malloc((size_t)H * sizeof *a);
    uint64_t t_tp = 0, t_pred = 0, t_truth = 0;
    for (int64_t i = begin; a && i < end; i++) {
        const float *p = hc_ffn_sample_p(s, layer, i);
        const uint64_t *fires = hc_ffn_sample_fires(s, layer, i);
        for (int h = 0; h < H; h++) {
            float v = dot(l->fc1 + (size_t)h * (size_t)n_embd, p, n_embd);
            a[h] = v > 0.0f ? v : 0.0f;
        }
        for (int r = 0; r < n_ff; r++) {
            int predicted = dot(l->fc2 + (size_t)r * (size_t)H, a, H) >= threshold;
            int truly = bit(fires, r);
            t_tp += predicted && truly;
            t_pred += predicted;
            t_truth += truly;
        }
    }
    free(a);
    *tp = t_tp;
    *pred = t_pred;
    *truth = t_truth;
}

int hc_predictor_evaluate(hc_predictor *pr, const hc_ffn_samples *held_out)
{
    if (held_out->n_layer != pr->n_layer || held_out->n_embd != pr->n_embd ||
        held_out->n_ff != pr->n_ff) {
        hc_set_error("predictor: held-out samples do not match the predictor's shape");
        return -1;
    }
    if (held_out->n == 0) {
        hc_set_error("predictor: no held-out samples to evaluate on");
        return -1;
    }
    for (int il = 0; il < pr->n_layer; il++) {
        hc_predictor_layer *l = &pr->layers[il];
        uint64_t tp, pred, truth;
        hc_predictor_layer_counts(l, pr->n_embd, pr->n_ff, pr->threshold, held_out, il, 0,
                                  held_out->n, &tp, &pred, &truth);
        double cells = (double)held_out->n * pr->n_ff;
        l->recall = truth ? (double)tp / (double)truth : 1.0;
        l->precision = pred ? (double)tp / (double)pred : 1.0;
        l->pred_frac = (double)pred / cells;
        l->true_frac = (double)truth / cells;
        l->evaluated = 1;
    }
    return 0;
}

/* ---- one layer, one rank ---------------------------------------------------- */
typedef struct fit_state {
    int E, F, H, B;
    float scale;  /* applied to p during training, folded into fc1 at the end */
    float *w1t, *w2t, *m1, *v1, *m2, *v2, *g1, *g2;
    float *xb, *a, *z, *dh;
    int64_t *perm;
} fit_state;

static void fit_free(fit_state *f)
{
    free(f->w1t);
    free(f->w2t);
    free(f->m1);
    free(f->v1);
    free(f->m2);
    free(f->v2);
    free(f->g1);
    free(f->g2);
    free(f->xb);
    free(f->a);
    free(f->z);
    free(f->dh);
    free(f->perm);
    memset(f, 0, sizeof *f);
}

static int fit_alloc(fit_state *f, int E, int F, int H, int B, int64_t n_fit)
{
    const size_t w1 = (size_t)E * (size_t)H, w2 = (size_t)H * (size_t)F;
    f->E = E;
    f->F = F;
    f->H = H;
    f->B = B;
    f->w1t = malloc(w1 * sizeof(float));
    f->w2t = malloc(w2 * sizeof(float));
    f->m1 = calloc(w1, sizeof(float));
    f->v1 = calloc(w1, sizeof(float));
    f->m2 = calloc(w2, sizeof(float));
    f->v2 = calloc(w2, sizeof(float));
    f->g1 = malloc(w1 * sizeof(float));
    f->g2 = malloc(w2 * sizeof(float));
    f->xb = malloc((size_t)B * (size_t)E * sizeof(float));
    f->a = malloc((size_t)B * (size_t)H * sizeof(float));
    f->z = malloc((size_t)B * (size_t)F * sizeof(float));
    f->dh = malloc((size_t)B * (size_t)H * sizeof(float));
    f->perm = malloc((size_t)n_fit * sizeof(int64_t));
    if (!f->w1t || !f->w2t || !f->m1 || !f->v1 || !f->m2 || !f->v2 || !f->g1 || !f->g2 ||
        !f->xb || !f->a || !f->z || !f->dh || !f->perm)
        return -1;
    return 0;
}

HOT void adam_step(float *restrict w, const float *restrict g, float *restrict m,
                   float *restrict v, size_t n, float lr_t, float b1, float b2)
{
    const float eps = 1e-8f;
    for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr_t * m[i] / (sqrtf(v[i]) + eps);
    }
}

/* a = relu(x . w1t) for the batch; z = a . w2t.  Zero hidden units skip
 * their row (about half of them). */
HOT void forward_batch(fit_state *f, int n)
{
    const int E = f->E, F = f->F, H = f->H;
    memset(f->a, 0, (size_t)n * (size_t)H * sizeof(float));
    memset(f->z, 0, (size_t)n * (size_t)F * sizeof(float));
    for (int b = 0; b < n; b++) {
        float *a = f->a + (size_t)b * H;
        const float *x = f->xb + (size_t)b * E;
        for (int e = 0; e < E; e++)
            if (x[e] != 0.0f)
                axpy(a, f->w1t + (size_t)e * H, x[e], H);
        for (int h = 0; h < H; h++)
            a[h] = a[h] > 0.0f ? a[h] : 0.0f;
        float *z = f->z + (size_t)b * F;
        for (int h = 0; h < H; h++)
            if (a[h] != 0.0f)
                axpy(z, f->w2t + (size_t)h * F, a[h], F);
    }
}

/* One Adam step on the samples idx[0 .. n). */
HOT void train_step_body(fit_state *f, const hc_ffn_samples *s, int layer, const int64_t *idx,
                         int n, float pos_weight, float lr_t)
{
    const int E = f->E, F = f->F, H = f->H;
    for (int b = 0; b < n; b++) {
        const float *p = hc_ffn_sample_p(s, layer, idx[b]);
        float *x = f->xb + (size_t)b * E;
        for (int e = 0; e < E; e++)
            x[e] = p[e] * f->scale;
    }
    forward_batch(f, n);
    /* dL/dz of the weighted binary cross-entropy, averaged over the batch:
     * y = 1: w * (sigmoid(z) - 1);  y = 0: sigmoid(z).  Stored over z. */
    const float inv_n = 1.0f / (float)n;
    for (int b = 0; b < n; b++) {
        const uint64_t *fires = hc_ffn_sample_fires(s, layer, idx[b]);
        float *z = f->z + (size_t)b * F;
        for (int r = 0; r < F; r++) {
            float sig = 1.0f / (1.0f + expf(-z[r]));
            z[r] = (bit(fires, r) ? pos_weight * (sig - 1.0f) : sig) * inv_n;
        }
    }
    memset(f->g2, 0, (size_t)H * (size_t)F * sizeof(float));
    memset(f->g1, 0, (size_t)E * (size_t)H * sizeof(float));
    for (int b = 0; b < n; b++) {
        const float *a = f->a + (size_t)b * H, *g = f->z + (size_t)b * F;
        float *dh = f->dh + (size_t)b * H;
        for (int h = 0; h < H; h++) {
            if (a[h] != 0.0f) {
                axpy(f->g2 + (size_t)h * F, g, a[h], F);
                dh[h] = dot(g, f->w2t + (size_t)h * F, F);
            } else {
                dh[h] = 0.0f; /* relu: no gradient through an inactive unit */
            }
        }
        const float *x = f->xb + (size_t)b * E;
        for (int e = 0; e < E; e++)
            if (x[e] != 0.0f)
                axpy(f->g1 + (size_t)e * H, dh, x[e], H);
    }
    adam_step(f->w1t, f->g1, f->m1, f->v1, (size_t)E * H, lr_t, 0.9f, 0.999f);
    adam_step(f->w2t, f->g2, f->m2, f->v2, (size_t)H * F, lr_t, 0.9f, 0.999f);
}

static void train_step_generic(fit_state *f, const hc_ffn_samples *s, int layer,
                               const int64_t *idx, int n, float pos_weight, float lr_t)
{
    train_step_body(f, s, layer, idx, n, pos_weight, lr_t);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void train_step_avx2(fit_state *f,
                                                            const hc_ffn_samples *s, int layer,
                                                            const int64_t *idx, int n,
                                                            float pos_weight, float lr_t)
{
    train_step_body(f, s, layer, idx, n, pos_weight, lr_t);
}
#endif

static void train_step(fit_state *f, const hc_ffn_samples *s, int layer, const int64_t *idx,
                       int n, float pos_weight, float lr_t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) {
        train_step_avx2(f, s, layer, idx, n, pos_weight, lr_t);
        return;
    }
#endif
    train_step_generic(f, s, layer, idx, n, pos_weight, lr_t);
}

/* 1 / RMS of the fitting inputs: puts every layer's p on the same scale. */
static float input_scale(const hc_ffn_samples *s, int layer, int64_t n_fit)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n_fit; i++) {
        const float *p = hc_ffn_sample_p(s, layer, i);
        for (int e = 0; e < s->n_embd; e++)
            ss += (double)p[e] * p[e];
    }
    double rms = sqrt(ss / ((double)n_fit * s->n_embd));
    return rms > 0.0 ? (float)(1.0 / rms) : 1.0f;
}

/* Share of (sample, neuron) cells that fire, over the fitting samples. */
static double positive_rate(const hc_ffn_samples *s, int layer, int64_t n_fit)
{
    uint64_t on = 0;
    for (int64_t i = 0; i < n_fit; i++) {
        const uint64_t *fires = hc_ffn_sample_fires(s, layer, i);
        for (int w = 0; w < s->words; w++)
            on += (uint64_t)__builtin_popcountll(fires[w]);
    }
    return (double)on / ((double)n_fit * s->n_ff);
}

/* Train a rank-H predictor for one layer on samples [0, n_fit) and return
 * it in `out` (fc1/fc2 allocated, scale folded in). */
static int fit_layer(const hc_ffn_samples *s, int layer, int H, int64_t n_fit,
                     const hc_train_params *prm, float pos_weight, hc_predictor_layer *out)
{
    fit_state f = {0};
    int rc = -1;
    const int E = s->n_embd, F = s->n_ff, B = prm->batch;
    if (fit_alloc(&f, E, F, H, B, n_fit)) {
        hc_set_error("train-predictor: out of memory for layer %d at rank %d", layer, H);
        goto out;
    }
    f.scale = input_scale(s, layer, n_fit);
    uint64_t rng = prm->seed ^ (0x51ed2701u * (uint64_t)(layer + 1)) ^
                   ((uint64_t)H << 40);
    splitmix64(&rng);
    /* Variance 1/E into the hidden layer (inputs have unit RMS) and 1/H into
     * the logits: both start near unit scale. */
    const float b1 = sqrtf(3.0f / (float)E), b2 = sqrtf(3.0f / (float)H);
    for (size_t i = 0; i < (size_t)E * H; i++)
        f.w1t[i] = b1 * uniform_pm1(&rng);
    for (size_t i = 0; i < (size_t)H * F; i++)
        f.w2t[i] = b2 * uniform_pm1(&rng);
    for (int64_t i = 0; i < n_fit; i++)
        f.perm[i] = i;

    const int64_t steps_per_epoch = (n_fit + B - 1) / B;
    const int64_t total = steps_per_epoch * prm->epochs;
    int64_t step = 0;
    double b1t = 1.0, b2t = 1.0;
    for (int ep = 0; ep < prm->epochs; ep++) {
        for (int64_t i = n_fit - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(splitmix64(&rng) % (uint64_t)(i + 1));
            int64_t t = f.perm[i];
            f.perm[i] = f.perm[j];
            f.perm[j] = t;
        }
        for (int64_t i0 = 0; i0 < n_fit; i0 += B, step++) {
            int n = (int)(n_fit - i0 < B ? n_fit - i0 : B);
            /* Linear decay to 5% of the rate, with Adam's bias correction. */
            double sched = 1.0 - 0.95 * (double)step / (double)total;
            b1t *= 0.9;
            b2t *= 0.999;
            float lr_t = (float)(prm->lr * sched * sqrt(1.0 - b2t) / (1.0 - b1t));
            train_step(&f, s, layer, f.perm + i0, n, pos_weight, lr_t);
        }
    }

    out->rank = H;
    out->fc1 = malloc((size_t)H * E * sizeof(float));
    out->fc2 = malloc((size_t)F * H * sizeof(float));
    if (!out->fc1 || !out->fc2) {
        free(out->fc1);
        free(out->fc2);
        out->fc1 = out->fc2 = NULL;
        hc_set_error("train-predictor: out of memory");
        goto out;
    }
    for (int h = 0; h < H; h++)
        for (int e = 0; e < E; e++)
            out->fc1[(size_t)h * E + e] = f.w1t[(size_t)e * H + h] * f.scale;
    for (int r = 0; r < F; r++)
        for (int h = 0; h < H; h++)
            out->fc2[(size_t)r * H + h] = f.w2t[(size_t)h * F + r];
    rc = 0;
out:
    fit_free(&f);
    return rc;
}

/* ---- all layers --------------------------------------------------------------- */
typedef struct train_job {
    const hc_ffn_samples *s;
    const hc_train_params *prm;
    hc_predictor *out;
    hc_train_event_fn on_event;
    void *user;
    pthread_mutex_t lock;
    int next_layer;
    int failed;
    char error[1024];
} train_job;

static void report(train_job *j, const hc_train_event *ev)
{
    if (!j->on_event)
        return;
    pthread_mutex_lock(&j->lock);
    j->on_event(j->user, ev);
    pthread_mutex_unlock(&j->lock);
}

static int train_one_layer(train_job *j, int il)
{
    const hc_ffn_samples *s = j->s;
    const hc_train_params *prm = j->prm;
    const int64_t n_sel = prm->rank > 0 ? 0 : (int64_t)((double)s->n * prm->select_frac);
    const int64_t n_fit = s->n - n_sel;
    int max_rank = prm->max_rank > 0 ? prm->max_rank : s->n_embd;
    double q = positive_rate(s, il, n_fit);
    float pos_weight = prm->pos_weight;
    if (!(pos_weight > 0.0f)) {
        /* 3 sqrt(off/on): sparser layers weigh a firing neuron more.  On
         * relu2M (12-40% active) this is 4-8, which puts the decision near
         * P(fire) = 0.15 and recall near 0.95 at ranks 32-128; plain BCE
         * (weight 1) gives about 0.85.  Clamped for dead or saturated layers. */
        double w = q > 0.0 && q < 1.0 ? 3.0 * sqrt((1.0 - q) / q) : 1.0;
        pos_weight = (float)(w < 1.0 ? 1.0 : w > 30.0 ? 30.0 : w);
    }
    hc_predictor_layer best = {0};
    double best_recall = -1.0, seconds = 0.0;
    int rank = prm->rank > 0 ? prm->rank : prm->min_rank;
    for (;;) {
        hc_predictor_layer cand = {0};
        double t0 = hc_time_s();
        if (fit_layer(s, il, rank, n_fit, prm, pos_weight, &cand))
            goto fail;
        hc_train_event ev = {.layer = il, .rank = rank, .seconds = hc_time_s() - t0};
        if (n_sel > 0) {
            uint64_t tp, pred, truth;
            hc_predictor_layer_counts(&cand, s->n_embd, s->n_ff, prm->threshold, s, il, n_fit,
                                      s->n, &tp, &pred, &truth);
            ev.select_recall = truth ? (double)tp / (double)truth : 1.0;
            ev.select_precision = pred ? (double)tp / (double)pred : 1.0;
            ev.select_pred_frac = (double)pred / ((double)n_sel * s->n_ff);
        }
        int reached = prm->rank > 0 || ev.select_recall >= prm->target_recall;
        int last = prm->rank > 0 || reached || rank >= max_rank;
        if (ev.select_recall > best_recall || reached) {
            free(best.fc1);
            free(best.fc2);
            best = cand;
            best.select_recall = ev.select_recall;
            best.reached_target = reached;
            best_recall = ev.select_recall;
        } else {
            free(cand.fc1);
            free(cand.fc2);
        }
        seconds += ev.seconds;
        ev.last = last;
        ev.chosen_rank = best.rank;
        report(j, &ev);
        if (last)
            break;
        rank = rank * 2 <= max_rank ? rank * 2 : max_rank;
    }
    best.seconds = seconds;
    j->out->layers[il] = best;
    return 0;
fail:
    free(best.fc1);
    free(best.fc2);
    return -1;
}

static void *train_worker(void *arg)
{
    train_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int il = j->failed || j->next_layer >= j->s->n_layer ? -1 : j->next_layer++;
        pthread_mutex_unlock(&j->lock);
        if (il < 0)
            break;
        if (train_one_layer(j, il)) {
            pthread_mutex_lock(&j->lock);
            if (!j->failed)
                snprintf(j->error, sizeof j->error, "%s", hc_last_error());
            j->failed = 1;
            pthread_mutex_unlock(&j->lock);
        }
    }
    return NULL;
}

int hc_predictor_train(const hc_ffn_samples *train, const hc_train_params *params,
                       hc_train_event_fn on_event, void *user, hc_predictor *out)
{
    hc_train_params prm = hc_train_default_params();
    if (params) {
        if (params->size == 0) {
            hc_set_error("hc_predictor_train: params.size is 0 (start from "
                         "hc_train_default_params())");
            return -1;
        }
        memcpy(&prm, params, params->size < sizeof prm ? params->size : sizeof prm);
    }
    const int E = train->n_embd;
    if (prm.rank < 0 || prm.rank > E * 4 || prm.min_rank < 1 || prm.epochs < 1 ||
        prm.batch < 1 || !(prm.lr > 0.0f) || !(prm.select_frac >= 0.0 && prm.select_frac < 1.0) ||
        !(prm.target_recall >= 0.0f && prm.target_recall <= 1.0f) || !isfinite(prm.threshold)) {
        hc_set_error("train-predictor: invalid parameters (rank %d, epochs %d, batch %d, lr %g)",
                     prm.rank, prm.epochs, prm.batch, (double)prm.lr);
        return -1;
    }
    if (prm.max_rank <= 0 || prm.max_rank > E)
        prm.max_rank = E;
    if (prm.min_rank > prm.max_rank)
        prm.min_rank = prm.max_rank;
    int64_t n_sel = prm.rank > 0 ? 0 : (int64_t)((double)train->n * prm.select_frac);
    if (train->n - n_sel < 16 || (prm.rank == 0 && n_sel < 16)) {
        hc_set_error("train-predictor: %lld samples are too few (need at least 16 to fit%s)",
                     (long long)train->n, prm.rank == 0 ? " and 16 to choose the rank" : "");
        return -1;
    }
    if (hc_predictor_init(out, train->n_layer, E, train->n_ff))
        return -1;
    out->threshold = prm.threshold;

    train_job j = {.s = train, .prm = &prm, .out = out, .on_event = on_event, .user = user};
    pthread_mutex_init(&j.lock, NULL);
    int n_threads = prm.n_threads < 1 ? 1 : prm.n_threads;
    if (n_threads > train->n_layer)
        n_threads = train->n_layer;
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    int started = 0;
    if (th)
        for (; started < n_threads - 1; started++)
            if (pthread_create(&th[started], NULL, train_worker, &j))
                break;
    train_worker(&j); /* this thread works too */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&j.lock);
    if (j.failed) {
        hc_set_error("%s", j.error);
        hc_predictor_free(out);
        return -1;
    }
    return 0;
}
