/*
 * Token sampler behind hc_sampler_* (hotcold.h).
 *
 * Pipeline, in llama.cpp's order and with its semantics:
 *   repetition penalty over the last repeat_last_n accepted tokens (each
 *   distinct token once: positive logits divided by the penalty, negative
 *   ones multiplied, so the token always becomes less likely) — applied in
 *   greedy mode too, as llama.cpp does, so a penalty can break greedy loops;
 *   temp <= 0: argmax (lowest id on ties);
 *   otherwise top-k, then top-p and min-p on the softmax of the (penalized,
 *   untempered) logits, then temperature, softmax and one draw.
 *
 * The draw uses xoshiro256** seeded through splitmix64, both written out here,
 * so a seed gives the same sequence everywhere.  Candidates are kept in a
 * total order (logit descending, then id ascending), so the result never
 * depends on how the C library's qsort orders equal elements.
 *
 * Scratch memory is allocated on the first call for a vocab size and reused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/hotcold.h"
#include "util/log.h"

typedef struct candidate {
    float logit;
    int32_t id;
} candidate;

struct hc_sampler {
    hc_sampler_params p;
    uint64_t rng[4];     /* xoshiro256** state */
    int32_t *recent;     /* ring buffer of the last repeat_last_n accepted ids */
    int n_recent;        /* how many of them are valid */
    int recent_pos;      /* next slot to overwrite */
    candidate *cand;     /* scratch, n_vocab entries */
    double *prob;        /* scratch, n_vocab entries */
    unsigned char *seen; /* scratch, n_vocab flags (all zero between calls) */
    int cap;             /* n_vocab the scratch was sized for */
};

hc_sampler_params hc_sampler_default_params(void)
{
    hc_sampler_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.temp = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 0x5eed;
    return p;
}

/* ---- PRNG ---------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(hc_sampler *s)
{
    return (double)(xoshiro_next(s->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- lifetime --------------------------------------------------------------------- */

static int check_params(const hc_sampler_params *p)
{
    if (isnan(p->temp)) {
        hc_set_error("sampler: temp is NaN");
        return -1;
    }
    if (p->top_k < 0) {
        hc_set_error("sampler: top_k %d is negative", p->top_k);
        return -1;
    }
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
        hc_set_error("sampler: top_p %g is outside (0, 1]", (double)p->top_p);
        return -1;
    }
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
        hc_set_error("sampler: min_p %g is outside [0, 1]", (double)p->min_p);
        return -1;
    }
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty)) {
        hc_set_error("sampler: repeat_penalty %g must be positive and finite",
                     (double)p->repeat_penalty);
        return -1;
    }
    if (p->repeat_last_n < 0) {
        hc_set_error("sampler: repeat_last_n %d is negative", p->repeat_last_n);
        return -1;
    }
    return 0;
}

hc_sampler *hc_sampler_new(const hc_sampler_params *params)
{
    hc_sampler_params p = hc_sampler_default_params();
    hc_sampler *s = NULL;
    uint64_t x;

    if (params) {
        /* A caller built against an older, shorter struct gets defaults for
         * the fields it does not know; a newer caller's extra fields are
         * beyond what this library can honour and are ignored. */
        if (params->size < sizeof params->size) {
            hc_set_error("sampler: params.size is %zu (use hc_sampler_default_params)",
                         params->size);
            goto fail;
        }
        memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
        p.size = sizeof p;
    }
    if (check_params(&p) != 0)
        goto fail;
    s = calloc(1, sizeof *s);
    if (!s) {
        hc_set_error("sampler: out of memory");
        goto fail;
    }
    s->p = p;
    x = p.seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
    if (p.repeat_last_n > 0) {
        s->recent = malloc((size_t)p.repeat_last_n * sizeof *s->recent);
        if (!s->recent) {
            hc_set_error("sampler: out of memory for a window of %d tokens", p.repeat_last_n);
            goto fail;
        }
    }
    return s;
fail:
    hc_sampler_free(s);
    return NULL;
}

void hc_sampler_free(hc_sampler *s)
{
    if (!s)
        return;
    free(s->recent);
    free(s->cand);
    free(s->prob);
    free(s->seen);
    free(s);
}

void hc_sampler_accept(hc_sampler *s, int32_t id)
{
    if (!s || s->p.repeat_last_n <= 0)
        return;
    s->recent[s->recent_pos] = id;
    s->recent_pos = (s->recent_pos + 1) % s->p.repeat_last_n;
    if (s->n_recent < s->p.repeat_last_n)
        s->n_recent++;
}

/* ---- pipeline stages ----------------------------------------------------------------- */

static int reserve(hc_sampler *s, int n_vocab)
{
    candidate *c;
    double *p;
    unsigned char *seen;
    if (n_vocab <= s->cap)
        return 0;
    c = realloc(s->cand, (size_t)n_vocab * sizeof *c);
    if (c)
        s->cand = c;
    p = realloc(s->prob, (size_t)n_vocab * sizeof *p);
    if (p)
        s->prob = p;
    seen = realloc(s->seen, (size_t)n_vocab);
    if (seen)
        s->seen = seen;
    if (!c || !p || !seen) {
        hc_set_error("sampler: out of memory for a vocab of %d", n_vocab);
        return -1;
    }
    memset(s->seen, 0, (size_t)n_vocab);
    s->cap = n_vocab;
    return 0;
}

static void apply_penalty(hc_sampler *s, float *logits, int n_vocab)
{
    float pen = s->p.repeat_penalty;
    if (pen == 1.0f || s->n_recent == 0)
        return;
    for (int i = 0; i < s->n_recent; i++) {
        int32_t id = s->recent[i];
        if (id < 0 || id >= n_vocab || s->seen[id])
            continue;
        s->seen[id] = 1;
        logits[id] = logits[id] > 0.0f ? logits[id] / pen : logits[id] * pen;
    }
    for (int i = 0; i < s->n_recent; i++) /* leave `seen` clean for the next call */
        if (s->recent[i] >= 0 && s->recent[i] < n_vocab)
            s->seen[s->recent[i]] = 0;
}

/* NaN never wins and never gets probability mass. */
static float clean(float x)
{
    return isnan(x) ? -INFINITY : x;
}

static int32_t argmax(const float *logits, int n_vocab)
{
    int32_t best = 0;
    float best_v = clean(logits[0]);
    for (int i = 1; i < n_vocab; i++) {
        float v = clean(logits[i]);
        if (v > best_v) { /* strict: the lowest id wins ties */
            best_v = v;
            best = i;
        }
    }
    return best;
}

/* True when a ranks before b: higher logit, then lower id. */
static int ranks_before(const candidate *a, const candidate *b)
{
    if (a->logit != b->logit)
        return a->logit > b->logit;
    return a->id < b->id;
}

static int cmp_candidate(const void *pa, const void *pb)
{
    const candidate *a = pa, *b = pb;
    return ranks_before(a, b) ? -1 : ranks_before(b, a) ? 1 : 0;
}

/* Move the k best candidates of c[0..n) to c[0..k) in O(n log k): c[0..k) is
 * kept as a heap whose root is the worst of the best so far. */
static void select_top_k(candidate *c, int n, int k)
{
    for (int i = 0; i < n; i++) {
        candidate x = c[i];
        int j;
        if (i < k) {
            j = i; /* sift up */
            while (j > 0 && ranks_before(&c[(j - 1) / 2], &x)) {
                c[j] = c[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            c[j] = x;
            continue;
        }
        if (!ranks_before(&x, &c[0]))
            continue;
        j = 0; /* replace the root, sift down */
        for (;;) {
            int ch = 2 * j + 1;
            if (ch >= k)
                break;
            if (ch + 1 < k && ranks_before(&c[ch], &c[ch + 1]))
                ch++;
            if (!ranks_before(&x, &c[ch]))
                break;
            c[j] = c[ch];
            j = ch;
        }
        c[j] = x;
    }
}

/* prob[i] = exp((logit[i] - max) * scale) for the sorted candidates (the
 * first holds the max); returns their sum (>= 1 since the first term is 1). */
static double softmax_weights(const candidate *c, int n, double scale, double *prob)
{
    double max = c[0].logit, sum = 0.0;
    for (int i = 0; i < n; i++) {
        double w;
        if (isinf(max)) /* +inf logits share all the mass (avoids inf - inf) */
            w = c[i].logit == max ? 1.0 : 0.0;
        else
            w = c[i].logit == -INFINITY ? 0.0 : exp(((double)c[i].logit - max) * scale);
        prob[i] = w;
        sum += w;
    }
    return sum;
}

int32_t hc_sampler_sample(hc_sampler *s, float *logits, int n_vocab)
{
    candidate *c;
    double *prob, sum, u, acc;
    int n;

    if (!s || !logits || n_vocab <= 0) {
        hc_set_error("sampler: invalid arguments (logits %p, n_vocab %d)", (void *)logits,
                     n_vocab);
        return -1;
    }
    if (reserve(s, n_vocab) != 0)
        return -1;
    apply_penalty(s, logits, n_vocab);
    if (!(s->p.temp > 0.0f))
        return argmax(logits, n_vocab);

    c = s->cand;
    prob = s->prob;
    for (int i = 0; i < n_vocab; i++)
        c[i] = (candidate){clean(logits[i]), i};
    n = n_vocab;
    if (s->p.top_k > 0 && s->p.top_k < n) {
        select_top_k(c, n, s->p.top_k);
        n = s->p.top_k;
    }
    qsort(c, (size_t)n, sizeof *c, cmp_candidate);
    if (c[0].logit == -INFINITY)
        return c[0].id; /* nothing has any mass: fall back to the lowest id */

    if (s->p.top_p < 1.0f || s->p.min_p > 0.0f) {
        sum = softmax_weights(c, n, 1.0, prob);
        if (s->p.top_p < 1.0f) {
            /* Smallest prefix whose mass reaches top_p; at least one. */
            double target = (double)s->p.top_p * sum;
            acc = 0.0;
            for (int i = 0; i < n; i++) {
                acc += prob[i];
                if (acc >= target) {
                    n = i + 1;
                    break;
                }
            }
        }
        if (s->p.min_p > 0.0f) {
            /* prob[0] is the max; it always passes since min_p <= 1. */
            double floor_p = (double)s->p.min_p * prob[0];
            int keep = 1;
            while (keep < n && prob[keep] >= floor_p)
                keep++;
            n = keep;
        }
    }

    sum = softmax_weights(c, n, 1.0 / (double)s->p.temp, prob);
    u = rng_uniform(s) * sum;
    acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += prob[i];
        if (u < acc)
            return c[i].id;
    }
    /* Rounding can leave u just above the running sum: the last kept token
     * with any weight is the right answer then. */
    for (int i = n - 1; i > 0; i--)
        if (prob[i] > 0.0)
            return c[i].id;
    return c[0].id;
}
