/*
 * The placement solver (placement.h): PowerInfer's fill order for the
 * non-neuron items, then a global greedy over groups of hot FFN neurons.
 *
 * Why a greedy and not PowerInfer's ILP: with its (default) zero per-layer
 * minimum the ILP maximises placed activation mass under one capacity, and
 * ranking fixed-size groups by mass per byte and taking them in turn is the
 * same answer whenever the groups cost the same; where they do not (layers
 * of different types, a smaller last group) it is the classic knapsack
 * greedy, at no Python, GLPK or solver time.
 *
 * Conventions this file fixes (the header leaves them open):
 *  - an item of 0 bytes fits any budget and is marked on the GPU, except a
 *    predictor of 0 bytes, which means "no predictor" and stays 0;
 *  - a layer's groups are taken in order (its hottest neurons first): once
 *    one of its groups does not fit, the rest of that layer stays on the
 *    CPU, so every layer's GPU set is a prefix of its frequency order and
 *    its size a multiple of the group (or n_ff);
 *  - ties in mass per byte go to the lower group index first, then the
 *    lower layer, so with no frequencies the layers fill evenly.
 */
#include "runtime/placement.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/placement_internal.h"
#include "util/log.h"

#define DEFAULT_GROUP 256
#define MIN_GROUP 32

/* ---- input ------------------------------------------------------------- */
static int add_u64(uint64_t *acc, uint64_t v)
{
    return __builtin_add_overflow(*acc, v, acc);
}

int hc_place_check_in(const hc_place_in *in, const char *who)
{
    if (!in) {
        hc_set_error("%s: no input", who);
        return -1;
    }
    if (in->n_layer <= 0) {
        hc_set_error("%s: n_layer is %d (must be > 0)", who, in->n_layer);
        return -1;
    }
    if (in->n_ff <= 0 || in->n_ff > INT32_MAX) {
        /* Neuron ids are I32 in the gpuidx file. */
        hc_set_error("%s: n_ff is %lld (must be 1..%d)", who, (long long)in->n_ff, INT32_MAX);
        return -1;
    }
    if (in->group < 0) {
        hc_set_error("%s: group is %d (must be >= 0; 0 = default)", who, in->group);
        return -1;
    }
    if (!in->layers) {
        hc_set_error("%s: layers is NULL", who);
        return -1;
    }
    if ((uint64_t)in->n_layer * (uint64_t)in->n_ff > SIZE_MAX / 64) {
        hc_set_error("%s: %d layers x %lld neurons is too many", who, in->n_layer,
                     (long long)in->n_ff);
        return -1;
    }
    uint64_t total = in->output_bytes;
    for (int l = 0; l < in->n_layer; l++) {
        const hc_place_layer_in *li = &in->layers[l];
        uint64_t ffn;
        if (li->neuron_bytes == 0) {
            hc_set_error("%s: layer %d: neuron_bytes is 0", who, l);
            return -1;
        }
        if (__builtin_mul_overflow(li->neuron_bytes, (uint64_t)in->n_ff, &ffn) ||
            add_u64(&total, ffn) || add_u64(&total, li->attn_bytes) ||
            add_u64(&total, li->pred_bytes) || add_u64(&total, li->ffn_norm_bytes) ||
            add_u64(&total, li->kv_bytes)) {
            hc_set_error("%s: layer %d: the model's bytes overflow 64 bits", who, l);
            return -1;
        }
        if (li->freq)
            for (int64_t r = 0; r < in->n_ff; r++)
                if (!isfinite(li->freq[r]) || li->freq[r] < 0) {
                    hc_set_error("%s: layer %d: freq[%lld] = %g (must be finite and >= 0)", who,
                                 l, (long long)r, (double)li->freq[r]);
                    return -1;
                }
    }
    return 0;
}

int hc_place_group_size(const hc_place_in *in)
{
    if (in->group > 0)
        return in->group;
    int64_t g = in->n_ff / 8 / MIN_GROUP * MIN_GROUP;
    if (g > DEFAULT_GROUP)
        g = DEFAULT_GROUP;
    if (g < MIN_GROUP)
        g = MIN_GROUP;
    return (int)g;
}

/* ---- plan storage ------------------------------------------------------ */
hc_plan *hc_place_alloc(const hc_place_in *in)
{
    hc_plan *p = calloc(1, sizeof *p);
    if (!p)
        goto oom;
    p->n_layer = in->n_layer;
    p->n_ff = in->n_ff;
    p->group = hc_place_group_size(in);
    p->budget = in->budget;
    p->layers = calloc((size_t)in->n_layer, sizeof *p->layers);
    if (!p->layers)
        goto oom;
    for (int l = 0; l < in->n_layer; l++) {
        p->layers[l].on_gpu = calloc((size_t)in->n_ff, 1);
        if (!p->layers[l].on_gpu)
            goto oom;
    }
    return p;
oom:
    hc_plan_free(p);
    hc_set_error("placement: out of memory");
    return NULL;
}

void hc_plan_free(hc_plan *p)
{
    if (!p)
        return;
    if (p->layers)
        for (int l = 0; l < p->n_layer; l++) {
            free(p->layers[l].hot);
            free(p->layers[l].on_gpu);
        }
    free(p->layers);
    free(p);
}

/* ---- the non-neuron items ---------------------------------------------- */
/* Put an item on the GPU if it fits what is left; skipping one that does
 * not lets a smaller item further down the list still go. */
static void take(int *flag, uint64_t bytes, uint64_t *left)
{
    if (bytes <= *left) {
        *left -= bytes;
        *flag = 1;
    }
}

uint64_t hc_place_fill_items(const hc_place_in *in, hc_plan *p)
{
    uint64_t left = in->budget;
    for (int l = 0; l < in->n_layer; l++)
        take(&p->layers[l].attn, in->layers[l].attn_bytes, &left);
    for (int l = 0; l < in->n_layer; l++)
        if (in->layers[l].pred_bytes)
            take(&p->layers[l].pred, in->layers[l].pred_bytes, &left);
    for (int l = 0; l < in->n_layer; l++)
        take(&p->layers[l].ffn_norm, in->layers[l].ffn_norm_bytes, &left);
    take(&p->output, in->output_bytes, &left);
    for (int l = 0; l < in->n_layer; l++)
        take(&p->layers[l].kv, in->layers[l].kv_bytes, &left);
    return left;
}

/* ---- accounting -------------------------------------------------------- */
int hc_place_finish(const hc_place_in *in, hc_plan *p)
{
    double served_sum = 0;
    p->gpu_bytes = p->cpu_bytes = 0;
    for (int l = 0; l < p->n_layer; l++) {
        const hc_place_layer_in *li = &in->layers[l];
        hc_place_layer *pl = &p->layers[l];
        int64_t n = 0;
        double mass = 0, gpu_mass = 0;
        for (int64_t r = 0; r < p->n_ff; r++) {
            double f = li->freq ? (double)li->freq[r] : 1.0;
            mass += f;
            if (pl->on_gpu[r]) {
                n++;
                gpu_mass += f;
            }
        }
        free(pl->hot);
        /* Never NULL, even when empty: callers may index it unconditionally. */
        pl->hot = malloc((size_t)(n ? n : 1) * sizeof *pl->hot);
        if (!pl->hot) {
            hc_set_error("placement: out of memory");
            return -1;
        }
        pl->n_hot = 0;
        for (int64_t r = 0; r < p->n_ff; r++)
            if (pl->on_gpu[r])
                pl->hot[pl->n_hot++] = (int32_t)r;
        pl->served = mass > 0 ? gpu_mass / mass : 0;
        served_sum += pl->served;

        /* hc_place_check_in bounded the whole model's bytes: no overflow. */
        uint64_t hot_b = li->neuron_bytes * (uint64_t)n;
        uint64_t cold_b = li->neuron_bytes * (uint64_t)(p->n_ff - n);
        pl->gpu_bytes = hot_b;
        pl->cpu_bytes = cold_b;
        *(pl->attn ? &pl->gpu_bytes : &pl->cpu_bytes) += li->attn_bytes;
        *(pl->pred ? &pl->gpu_bytes : &pl->cpu_bytes) += li->pred_bytes;
        *(pl->ffn_norm ? &pl->gpu_bytes : &pl->cpu_bytes) += li->ffn_norm_bytes;
        *(pl->kv ? &pl->gpu_bytes : &pl->cpu_bytes) += li->kv_bytes;
        p->gpu_bytes += pl->gpu_bytes;
        p->cpu_bytes += pl->cpu_bytes;
    }
    *(p->output ? &p->gpu_bytes : &p->cpu_bytes) += in->output_bytes;
    p->served = served_sum / p->n_layer;
    return 0;
}

/* ---- the neurons ------------------------------------------------------- */
typedef struct ranked {
    float f;
    int32_t id;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->f != y->f)
        return x->f < y->f ? 1 : -1; /* hottest first */
    return (x->id > y->id) - (x->id < y->id);
}

/* Layer l's neurons, hottest first, ties by id. */
static void sort_layer(const hc_place_in *in, int l, ranked *tmp)
{
    const float *freq = in->layers[l].freq;
    for (int64_t r = 0; r < in->n_ff; r++)
        tmp[r] = (ranked){.f = freq ? freq[r] : 1.0f, .id = (int32_t)r};
    if (freq)
        qsort(tmp, (size_t)in->n_ff, sizeof *tmp, cmp_ranked);
}

typedef struct group {
    double density; /* activation mass per byte */
    int64_t index;  /* within its layer, hottest = 0 */
    int layer;
    uint64_t bytes;
} group;

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->density != y->density)
        return x->density < y->density ? 1 : -1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return (x->layer > y->layer) - (x->layer < y->layer);
}

static int place_neurons(const hc_place_in *in, hc_plan *p, uint64_t left)
{
    int rc = -1;
    const int64_t n_ff = in->n_ff, gs = p->group;
    const int64_t per_layer = (n_ff + gs - 1) / gs;
    ranked *tmp = malloc((size_t)n_ff * sizeof *tmp);
    group *gr = malloc((size_t)in->n_layer * (size_t)per_layer * sizeof *gr);
    int64_t *taken = calloc((size_t)in->n_layer, sizeof *taken);
    if (!tmp || !gr || !taken) {
        hc_set_error("placement: out of memory");
        goto out;
    }
    size_t ng = 0;
    for (int l = 0; l < in->n_layer; l++) {
        const uint64_t nb = in->layers[l].neuron_bytes;
        double prev = INFINITY;
        sort_layer(in, l, tmp);
        for (int64_t g = 0; g < per_layer; g++) {
            int64_t lo = g * gs, hi = lo + gs < n_ff ? lo + gs : n_ff;
            double mass = 0;
            for (int64_t r = lo; r < hi; r++)
                mass += tmp[r].f;
            double d = mass / ((double)nb * (double)(hi - lo));
            /* Sorted neurons make this non-increasing already; the running
             * minimum only guards against rounding so that a layer's groups
             * always rank in their own order. */
            if (d > prev)
                d = prev;
            prev = d;
            gr[ng++] = (group){.density = d, .index = g, .layer = l,
                               .bytes = nb * (uint64_t)(hi - lo)};
        }
    }
    qsort(gr, ng, sizeof *gr, cmp_group);
    /* A layer's groups come in their own order (ties go to the lower
     * index), so a group is next in its layer unless an earlier one did not
     * fit; then the layer is done, keeping its GPU set a prefix. */
    for (size_t i = 0; i < ng; i++) {
        const group *g = &gr[i];
        if (g->index == taken[g->layer] && g->bytes <= left) {
            left -= g->bytes;
            taken[g->layer]++;
        }
    }
    for (int l = 0; l < in->n_layer; l++) {
        int64_t n = taken[l] * gs < n_ff ? taken[l] * gs : n_ff;
        if (!n)
            continue;
        sort_layer(in, l, tmp);
        for (int64_t r = 0; r < n; r++)
            p->layers[l].on_gpu[tmp[r].id] = 1;
    }
    rc = 0;
out:
    free(tmp);
    free(gr);
    free(taken);
    return rc;
}

/* ---- public ------------------------------------------------------------ */
hc_plan *hc_place_begin(const hc_place_in *in, hc_plan **out)
{
    if (!out) {
        hc_set_error("placement: out is NULL");
        return NULL;
    }
    *out = NULL;
    if (hc_place_check_in(in, "placement"))
        return NULL;
    return hc_place_alloc(in);
}

int hc_plan_solve(const hc_place_in *in, hc_plan **out)
{
    hc_plan *p = hc_place_begin(in, out);
    if (!p)
        return -1;
    uint64_t left = hc_place_fill_items(in, p);
    p->capacity = left;
    if (place_neurons(in, p, left) || hc_place_finish(in, p)) {
        hc_plan_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

int hc_plan_all(const hc_place_in *in, int on_gpu, hc_plan **out)
{
    hc_plan *p = hc_place_begin(in, out);
    if (!p)
        return -1;
    on_gpu = on_gpu != 0;
    p->output = on_gpu;
    for (int l = 0; l < in->n_layer; l++) {
        hc_place_layer *pl = &p->layers[l];
        pl->attn = pl->ffn_norm = pl->kv = on_gpu;
        pl->pred = on_gpu && in->layers[l].pred_bytes;
        memset(pl->on_gpu, on_gpu, (size_t)in->n_ff);
    }
    if (hc_place_finish(in, p)) {
        hc_plan_free(p);
        return -1;
    }
    *out = p;
    return 0;
}
