/*
 * hc_sampler_*: greedy, top-k/top-p/min-p filtering, repetition penalty,
 * seeding, and the drawn frequencies against softmax probabilities computed
 * here in double precision.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/hotcold.h"
#include "test_util.h"

#define MAXV 64

/* Plain sampling at temperature t: no filters, no penalty. */
static hc_sampler_params plain(float temp, uint64_t seed)
{
    hc_sampler_params p = hc_sampler_default_params();
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = seed;
    return p;
}

static hc_sampler *new_or_fail(const hc_sampler_params *p)
{
    hc_sampler *s = hc_sampler_new(p);
    ck_assert_msg(s != NULL, "hc_sampler_new: %s", hc_last_error());
    return s;
}

/* Sample from a copy (the sampler may modify the logits it is given). */
static int32_t draw(hc_sampler *s, const float *logits, int n)
{
    float tmp[MAXV];
    memcpy(tmp, logits, (size_t)n * sizeof *tmp);
    int32_t id = hc_sampler_sample(s, tmp, n);
    ck_assert_msg(id >= 0 && id < n, "sample returned %d: %s", (int)id, hc_last_error());
    return id;
}

/* Reference argmax, lowest id on ties. */
static int ref_argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

/* Deterministic pseudo-random logits for the tests (an LCG unrelated to the
 * sampler's generator); values on a coarse grid so ties occur. */
static void fill_logits(float *l, int n, unsigned *state, int coarse)
{
    for (int i = 0; i < n; i++) {
        *state = *state * 1103515245u + 12345u;
        unsigned r = (*state >> 8) % 1000u;
        l[i] = coarse ? (float)(r % 7) - 3.0f : ((float)r - 500.0f) / 100.0f;
    }
}

/* Bitmask of the ids drawn over `draws` samples. */
static uint64_t drawn_set(const hc_sampler_params *p, const float *logits, int n, int draws)
{
    hc_sampler *s = new_or_fail(p);
    uint64_t set = 0;
    for (int i = 0; i < draws; i++)
        set |= 1ull << draw(s, logits, n);
    hc_sampler_free(s);
    return set;
}

START_TEST(defaults)
{
    hc_sampler_params p = hc_sampler_default_params();
    ck_assert_uint_eq(p.size, sizeof p);
    ck_assert_float_eq(p.temp, 0.8f);
    ck_assert_int_eq(p.top_k, 40);
    ck_assert_float_eq(p.top_p, 0.95f);
    ck_assert_float_eq(p.min_p, 0.05f);
    ck_assert_float_eq(p.repeat_penalty, 1.0f);
    ck_assert_int_eq(p.repeat_last_n, 64);
    ck_assert_uint_eq(p.seed, 0x5eed);
}
END_TEST

START_TEST(bad_params)
{
    hc_sampler_params p = hc_sampler_default_params();
    p.top_p = 0.0f;
    ck_assert_ptr_null(hc_sampler_new(&p));
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "top_p"));
    p = hc_sampler_default_params();
    p.min_p = -0.5f;
    ck_assert_ptr_null(hc_sampler_new(&p));
    p = hc_sampler_default_params();
    p.top_k = -1;
    ck_assert_ptr_null(hc_sampler_new(&p));
    p = hc_sampler_default_params();
    p.repeat_penalty = 0.0f;
    ck_assert_ptr_null(hc_sampler_new(&p));
    p = hc_sampler_default_params();
    p.temp = NAN;
    ck_assert_ptr_null(hc_sampler_new(&p));
    p = hc_sampler_default_params();
    p.size = 0;
    ck_assert_ptr_null(hc_sampler_new(&p));

    hc_sampler *s = new_or_fail(NULL); /* NULL: defaults */
    float l[2] = {0, 1};
    ck_assert_int_lt(hc_sampler_sample(s, NULL, 2), 0);
    ck_assert_int_lt(hc_sampler_sample(s, l, 0), 0);
    hc_sampler_free(s);
    hc_sampler_free(NULL);
}
END_TEST

START_TEST(greedy_is_argmax)
{
    hc_sampler_params p = plain(0.0f, 1);
    hc_sampler *s = new_or_fail(&p);
    float ties[6] = {1.0f, 3.0f, -2.0f, 3.0f, 2.9f, 3.0f};
    ck_assert_int_eq(draw(s, ties, 6), 1);
    float neg[3] = {-5.0f, -1.0f, -1.0f};
    ck_assert_int_eq(draw(s, neg, 3), 1);
    unsigned st = 7;
    for (int rep = 0; rep < 500; rep++) {
        float l[MAXV];
        int n = 1 + rep % MAXV;
        fill_logits(l, n, &st, rep % 2);
        ck_assert_int_eq(draw(s, l, n), ref_argmax(l, n));
    }
    hc_sampler_free(s);

    /* A negative temperature is greedy too, and the default filters do not
     * change that. */
    p = hc_sampler_default_params();
    p.temp = -1.0f;
    s = new_or_fail(&p);
    ck_assert_int_eq(draw(s, ties, 6), 1);
    hc_sampler_free(s);
}
END_TEST

START_TEST(top_k_one_is_greedy)
{
    const float temps[] = {0.1f, 0.8f, 1.0f, 3.0f, 100.0f};
    unsigned st = 11;
    for (size_t t = 0; t < sizeof temps / sizeof temps[0]; t++) {
        hc_sampler_params p = hc_sampler_default_params();
        p.temp = temps[t];
        p.top_k = 1;
        p.top_p = 1.0f;
        p.min_p = 0.0f;
        p.seed = 100 + t;
        hc_sampler *s = new_or_fail(&p);
        for (int rep = 0; rep < 300; rep++) {
            float l[MAXV];
            int n = 1 + rep % MAXV;
            fill_logits(l, n, &st, rep % 2);
            ck_assert_msg(draw(s, l, n) == ref_argmax(l, n), "temp %g rep %d", (double)temps[t],
                          rep);
        }
        hc_sampler_free(s);
    }
}
END_TEST

/* A flat-ish distribution over 50 tokens, so sequences carry many bits. */
static void sequence(uint64_t seed, int32_t *out, int n)
{
    hc_sampler_params p = hc_sampler_default_params();
    p.seed = seed;
    p.temp = 1.0f;
    hc_sampler *s = new_or_fail(&p);
    float l[50];
    for (int i = 0; i < 50; i++)
        l[i] = (float)(i % 5) * 0.1f;
    for (int i = 0; i < n; i++)
        out[i] = draw(s, l, 50);
    hc_sampler_free(s);
}

START_TEST(seeding)
{
    int32_t a[500], b[500], c[500];
    sequence(1234, a, 500);
    sequence(1234, b, 500);
    sequence(1235, c, 500);
    ck_assert_mem_eq(a, b, sizeof a);
    int same = 0;
    for (int i = 0; i < 500; i++)
        same += a[i] == c[i];
    /* Independent draws over ~50 near-equal tokens agree ~1/50 of the time:
     * ~10 of 500 expected; 60 would be a >15-sigma coincidence. */
    ck_assert_msg(same < 60, "seeds 1234 and 1235 agree on %d of 500 draws", same);
    /* Not all the same token: the draw is really random. */
    int distinct = 0;
    for (int v = 0; v < 50; v++)
        for (int i = 0; i < 500; i++)
            if (a[i] == v) {
                distinct++;
                break;
            }
    ck_assert_int_gt(distinct, 30);
}
END_TEST

/* probabilities 0.5, 0.3, 0.15, 0.05, placed at scattered ids among tokens
 * with no mass, so filtering must follow the values, not the positions. */
static const int probe_ids[4] = {9, 2, 14, 5};
static void probe_logits(float *l)
{
    static const double pr[4] = {0.5, 0.3, 0.15, 0.05};
    for (int i = 0; i < 16; i++)
        l[i] = -INFINITY;
    for (int i = 0; i < 4; i++)
        l[probe_ids[i]] = (float)log(pr[i]);
}
static uint64_t first_ranks(int k)
{
    uint64_t set = 0;
    for (int i = 0; i < k; i++)
        set |= 1ull << probe_ids[i];
    return set;
}

START_TEST(top_p_set)
{
    float l[16];
    probe_logits(l);
    struct { float top_p, temp; int keep; } cases[] = {
        {0.01f, 1.0f, 1}, {0.45f, 1.0f, 1}, {0.7f, 1.0f, 2}, {0.79f, 1.0f, 2},
        {0.85f, 1.0f, 3}, {0.9f, 1.0f, 3}, {0.97f, 1.0f, 4}, {1.0f, 1.0f, 4},
        /* top-p acts on the untempered distribution: a hot temperature
         * flattens what is drawn but not which tokens survive. */
        {0.7f, 5.0f, 2}, {0.85f, 0.5f, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_sampler_params p = plain(cases[i].temp, 42 + i);
        p.top_p = cases[i].top_p;
        uint64_t got = drawn_set(&p, l, 16, 4000);
        ck_assert_msg(got == first_ranks(cases[i].keep),
                      "top_p %g temp %g: drawn set %#llx, want %#llx", (double)cases[i].top_p,
                      (double)cases[i].temp, (unsigned long long)got,
                      (unsigned long long)first_ranks(cases[i].keep));
    }
}
END_TEST

START_TEST(min_p_set)
{
    float l[16];
    probe_logits(l);
    /* min_p keeps tokens with p >= min_p * 0.5 */
    struct { float min_p, temp; int keep; } cases[] = {
        {0.9f, 1.0f, 1}, {0.61f, 1.0f, 1}, {0.59f, 1.0f, 2}, {0.35f, 1.0f, 2},
        {0.25f, 1.0f, 3}, {0.11f, 1.0f, 3}, {0.09f, 1.0f, 4}, {0.0f, 1.0f, 4},
        {1.0f, 1.0f, 1}, {0.35f, 4.0f, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_sampler_params p = plain(cases[i].temp, 77 + i);
        p.min_p = cases[i].min_p;
        uint64_t got = drawn_set(&p, l, 16, 4000);
        ck_assert_msg(got == first_ranks(cases[i].keep),
                      "min_p %g: drawn set %#llx, want %#llx", (double)cases[i].min_p,
                      (unsigned long long)got, (unsigned long long)first_ranks(cases[i].keep));
    }
}
END_TEST

START_TEST(top_k_set)
{
    float l[16];
    probe_logits(l);
    for (int k = 1; k <= 4; k++) {
        hc_sampler_params p = plain(2.0f, 5 + (uint64_t)k);
        p.top_k = k;
        ck_assert_uint_eq(drawn_set(&p, l, 16, 4000), first_ranks(k));
    }
    /* Finite logits everywhere: top-k alone decides; ties at the cut keep the
     * lower id. */
    float f[12] = {0, 5, 1, 5, 2, 4, 3, 5, 0, 1, 4, 2};
    hc_sampler_params p = plain(1.0f, 3);
    p.top_k = 2;
    ck_assert_uint_eq(drawn_set(&p, f, 12, 3000), (1ull << 1) | (1ull << 3));
    p.top_k = 4;
    ck_assert_uint_eq(drawn_set(&p, f, 12, 3000), (1ull << 1) | (1ull << 3) | (1ull << 7) |
                                                      (1ull << 5));
}
END_TEST

START_TEST(repetition_penalty)
{
    hc_sampler_params p = plain(0.0f, 1);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 3;
    hc_sampler *s = new_or_fail(&p);

    /* Positive logit divided: 2.0 -> 1.0 < 1.5. */
    float a[3] = {2.0f, -1.0f, 1.5f};
    ck_assert_int_eq(draw(s, a, 3), 0);
    hc_sampler_accept(s, 0);
    ck_assert_int_eq(draw(s, a, 3), 2);

    /* Negative logit multiplied: -1.0 -> -2.0 < -1.2 (dividing would have
     * raised it to -0.5 and kept it on top). */
    float b[3] = {-1.0f, -1.2f, -3.0f};
    ck_assert_int_eq(draw(s, b, 3), 1); /* 0 is still in the window */

    /* A token repeated in the window is penalized once: 4.0 -> 2.0 > 1.5. */
    hc_sampler_accept(s, 0);
    float c[3] = {4.0f, 1.5f, 0.0f};
    ck_assert_int_eq(draw(s, c, 3), 0);

    /* The window forgets: after three other tokens, 0 is free again. */
    hc_sampler_accept(s, 1);
    hc_sampler_accept(s, 2);
    hc_sampler_accept(s, 1);
    ck_assert_int_eq(draw(s, a, 3), 0);
    /* Out-of-range accepted ids are ignored. */
    hc_sampler_accept(s, 1000);
    hc_sampler_accept(s, -3);
    ck_assert_int_eq(draw(s, a, 3), 0);
    hc_sampler_free(s);

    /* When sampling, a penalized token is drawn less often. */
    float u[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    int hits[2] = {0, 0};
    for (int pen = 0; pen < 2; pen++) {
        hc_sampler_params q = plain(1.0f, 99);
        q.repeat_penalty = pen ? 3.0f : 1.0f;
        s = new_or_fail(&q);
        hc_sampler_accept(s, 2);
        for (int i = 0; i < 4000; i++)
            hits[pen] += draw(s, u, 4) == 2;
        hc_sampler_free(s);
    }
    /* Unpenalized 1/4; penalized e^(1/3)/(3e + e^(1/3)) ~ 0.141. */
    ck_assert_msg(hits[0] > 900 && hits[1] < 700, "hits without %d, with %d", hits[0], hits[1]);
}
END_TEST

/* Frequencies over 20000 draws against softmax(logits / temp) computed here.
 * Each count is Binomial(N, p): its standard deviation is sqrt(p(1-p)/N)
 * (at most 0.0035 at N = 20000).  Allowing 5 sigma per token makes a false
 * failure of a correct sampler a ~1e-6 event per token — and the seed is
 * fixed, so the outcome is deterministic anyway — while an error such as a
 * missing or doubled temperature, or an off-by-one in the cumulative walk,
 * moves some probability by far more. */
static void check_frequencies(float temp, uint64_t seed)
{
    const float l[8] = {1.0f, 0.5f, -0.25f, 2.0f, 0.0f, -1.0f, 1.5f, -3.0f};
    const int n = 8, N = 20000;
    double pr[8], sum = 0.0;
    int count[8] = {0};
    for (int i = 0; i < n; i++)
        sum += pr[i] = exp((double)l[i] / temp);
    for (int i = 0; i < n; i++)
        pr[i] /= sum;

    hc_sampler_params p = plain(temp, seed);
    hc_sampler *s = new_or_fail(&p);
    for (int i = 0; i < N; i++)
        count[draw(s, l, n)]++;
    hc_sampler_free(s);
    for (int i = 0; i < n; i++) {
        double f = (double)count[i] / N;
        double sigma = sqrt(pr[i] * (1.0 - pr[i]) / N);
        ck_assert_msg(fabs(f - pr[i]) <= 5.0 * sigma + 1e-12,
                      "temp %g token %d: frequency %.4f, softmax %.4f (sigma %.4f)", (double)temp,
                      i, f, pr[i], sigma);
    }
}

START_TEST(frequencies_match_softmax)
{
    check_frequencies(1.0f, 2024);
    check_frequencies(0.5f, 7);
    check_frequencies(2.0f, 8);
}
END_TEST

START_TEST(large_vocab_defaults)
{
    /* The default pipeline on a 32000-entry vocab: every draw is one of the
     * top 40, and scratch reuse across different sizes is safe. */
    enum { NV = 32000 };
    float *l = malloc(NV * sizeof *l), *tmp = malloc(NV * sizeof *tmp);
    ck_assert_ptr_nonnull(l);
    ck_assert_ptr_nonnull(tmp);
    unsigned st = 3;
    for (int i = 0; i < NV; i++) {
        st = st * 1103515245u + 12345u;
        l[i] = (float)((st >> 8) % 100000u) / 10000.0f; /* 0..10, 1e-4 grid */
    }
    /* The 40th largest value: everything drawn must be at least that. */
    static int cnt[100001];
    memset(cnt, 0, sizeof cnt);
    for (int i = 0; i < NV; i++)
        cnt[(int)lroundf(l[i] * 10000.0f)]++;
    int k = 0, thresh = 100000;
    while (thresh > 0 && k + cnt[thresh] < 40)
        k += cnt[thresh--];
    hc_sampler_params p = hc_sampler_default_params();
    p.temp = 1.5f;
    p.min_p = 0.0f;
    p.top_p = 1.0f;
    hc_sampler *s = new_or_fail(&p);
    for (int rep = 0; rep < 200; rep++) {
        int n = rep % 2 ? NV : 1000;
        memcpy(tmp, l, (size_t)n * sizeof *tmp);
        int32_t id = hc_sampler_sample(s, tmp, n);
        ck_assert_int_ge(id, 0);
        ck_assert_int_lt(id, n);
        if (n == NV)
            ck_assert_int_ge((int)lroundf(l[id] * 10000.0f), thresh);
        hc_sampler_accept(s, id);
    }
    hc_sampler_free(s);
    free(l);
    free(tmp);
}
END_TEST

START_TEST(nonfinite_logits)
{
    hc_sampler_params p = plain(1.0f, 5);
    hc_sampler *s = new_or_fail(&p);
    float a[4] = {NAN, -INFINITY, 0.0f, NAN};
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(draw(s, a, 4), 2);
    float b[3] = {1.0f, INFINITY, 2.0f};
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(draw(s, b, 3), 1);
    hc_sampler_free(s);
}
END_TEST

static Suite *sampler_suite(void)
{
    Suite *su = suite_create("sampler");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, bad_params);
    tcase_add_test(tc, greedy_is_argmax);
    tcase_add_test(tc, top_k_one_is_greedy);
    tcase_add_test(tc, seeding);
    tcase_add_test(tc, top_p_set);
    tcase_add_test(tc, min_p_set);
    tcase_add_test(tc, top_k_set);
    tcase_add_test(tc, repetition_penalty);
    tcase_add_test(tc, frequencies_match_softmax);
    tcase_add_test(tc, large_vocab_defaults);
    tcase_add_test(tc, nonfinite_logits);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(sampler_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
