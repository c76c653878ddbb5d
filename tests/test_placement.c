/*
 * The placement solver (core/runtime/placement.h), its gpuidx files, the sources
 * of its frequencies (core/runtime/placement_stats.h) and the plan table printer.
 *
 * Every expectation is worked out by hand from made-up shapes (the comments
 * show the arithmetic), never read back from the solver.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/act_counts.h"
#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "plan_print.h"
#include "runtime/model.h"
#include "runtime/placement.h"
#include "runtime/placement_stats.h"
#include "test_util.h"

#define PT_DIR HC_TEST_DATA "/pt"
#define MAXL 8
#define MAXF 128

/* ---- a made-up model ------------------------------------------------------ */
typedef struct toy {
    hc_place_in in;
    hc_place_layer_in l[MAXL];
    float freq[MAXL][MAXF];
} toy;

/* n_layer layers of n_ff neurons; sizes set per test. */
static void toy_init(toy *t, int n_layer, int64_t n_ff, int group)
{
    memset(t, 0, sizeof *t);
    ck_assert_int_le(n_layer, MAXL);
    ck_assert_int_le(n_ff, MAXF);
    t->in.n_layer = n_layer;
    t->in.n_ff = n_ff;
    t->in.group = group;
    t->in.layers = t->l;
}

static void toy_sizes(toy *t, uint64_t attn, uint64_t pred, uint64_t norm, uint64_t kv,
                      uint64_t neuron, uint64_t output)
{
    for (int i = 0; i < t->in.n_layer; i++)
        t->l[i] = (hc_place_layer_in){.attn_bytes = attn, .pred_bytes = pred,
                                      .ffn_norm_bytes = norm, .kv_bytes = kv,
                                      .neuron_bytes = neuron};
    t->in.output_bytes = output;
}

static void toy_use_freq(toy *t)
{
    for (int i = 0; i < t->in.n_layer; i++)
        t->l[i].freq = t->freq[i];
}

/* The model's bytes, summed here independently of the solver. */
static uint64_t toy_total(const toy *t)
{
    uint64_t s = t->in.output_bytes;
    for (int i = 0; i < t->in.n_layer; i++)
        s += t->l[i].attn_bytes + t->l[i].pred_bytes + t->l[i].ffn_norm_bytes +
             t->l[i].kv_bytes + t->l[i].neuron_bytes * (uint64_t)t->in.n_ff;
    return s;
}

static hc_plan *solve(const toy *t, uint64_t budget)
{
    hc_place_in in = t->in;
    hc_plan *p = NULL;
    in.budget = budget;
    ck_assert_msg(hc_plan_solve(&in, &p) == 0, "solve: %s", hc_last_error());
    ck_assert_ptr_nonnull(p);
    return p;
}

/* The invariants every plan keeps: hot[] and on_gpu[] agree, hot ascending,
 * per-layer bytes from the flags, totals add up to the model's bytes. */
static void check_consistent(const toy *t, const hc_plan *p)
{
    uint64_t gpu = 0, cpu = 0;
    ck_assert_int_eq(p->n_layer, t->in.n_layer);
    ck_assert_int_eq(p->n_ff, t->in.n_ff);
    for (int i = 0; i < p->n_layer; i++) {
        const hc_place_layer *pl = &p->layers[i];
        const hc_place_layer_in *li = &t->l[i];
        int64_t n = 0;
        for (int64_t r = 0; r < p->n_ff; r++) {
            ck_assert_uint_le(pl->on_gpu[r], 1);
            n += pl->on_gpu[r];
        }
        ck_assert_int_eq(n, pl->n_hot);
        for (int64_t k = 0; k < pl->n_hot; k++) {
            ck_assert_int_eq(pl->on_gpu[pl->hot[k]], 1);
            if (k)
                ck_assert_int_lt(pl->hot[k - 1], pl->hot[k]);
        }
        uint64_t g = li->neuron_bytes * (uint64_t)pl->n_hot;
        uint64_t c = li->neuron_bytes * (uint64_t)(p->n_ff - pl->n_hot);
        (pl->attn ? &g : &c)[0] += li->attn_bytes;
        (pl->pred ? &g : &c)[0] += li->pred_bytes;
        (pl->ffn_norm ? &g : &c)[0] += li->ffn_norm_bytes;
        (pl->kv ? &g : &c)[0] += li->kv_bytes;
        ck_assert_uint_eq(pl->gpu_bytes, g);
        ck_assert_uint_eq(pl->cpu_bytes, c);
        gpu += g;
        cpu += c;
        if (!li->pred_bytes)
            ck_assert_int_eq(pl->pred, 0);
    }
    (p->output ? &gpu : &cpu)[0] += t->in.output_bytes;
    ck_assert_uint_eq(p->gpu_bytes, gpu);
    ck_assert_uint_eq(p->cpu_bytes, cpu);
    ck_assert_uint_eq(p->gpu_bytes + p->cpu_bytes, toy_total(t));
}

static void check_solved(const toy *t, const hc_plan *p, uint64_t budget)
{
    check_consistent(t, p);
    ck_assert_uint_le(p->gpu_bytes, budget);
    ck_assert_uint_eq(p->budget, budget);
    ck_assert_int_eq(p->from_file, 0);
}

static void expect_flags(const hc_plan *p, int l, int attn, int pred, int norm, int kv)
{
    ck_assert_msg(p->layers[l].attn == attn && p->layers[l].pred == pred &&
                      p->layers[l].ffn_norm == norm && p->layers[l].kv == kv,
                  "layer %d: attn %d pred %d norm %d kv %d, expected %d %d %d %d", l,
                  p->layers[l].attn, p->layers[l].pred, p->layers[l].ffn_norm, p->layers[l].kv,
                  attn, pred, norm, kv);
}

/* Layer l's GPU set is exactly ids [lo, hi) plus [lo2, hi2). */
static void expect_hot(const hc_plan *p, int l, int lo, int hi, int lo2, int hi2)
{
    for (int r = 0; r < p->n_ff; r++) {
        int want = (r >= lo && r < hi) || (r >= lo2 && r < hi2);
        ck_assert_msg(p->layers[l].on_gpu[r] == want, "layer %d neuron %d: on_gpu %d, want %d",
                      l, r, p->layers[l].on_gpu[r], want);
    }
}

static void plans_equal(const hc_plan *a, const hc_plan *b)
{
    ck_assert_int_eq(a->n_layer, b->n_layer);
    ck_assert_int_eq(a->n_ff, b->n_ff);
    ck_assert_int_eq(a->group, b->group);
    ck_assert_uint_eq(a->budget, b->budget);
    ck_assert_int_eq(a->output, b->output);
    ck_assert_uint_eq(a->gpu_bytes, b->gpu_bytes);
    ck_assert_uint_eq(a->cpu_bytes, b->cpu_bytes);
    ck_assert_double_eq_tol(a->served, b->served, 1e-12);
    for (int l = 0; l < a->n_layer; l++) {
        const hc_place_layer *x = &a->layers[l], *y = &b->layers[l];
        ck_assert_int_eq(x->attn, y->attn);
        ck_assert_int_eq(x->pred, y->pred);
        ck_assert_int_eq(x->ffn_norm, y->ffn_norm);
        ck_assert_int_eq(x->kv, y->kv);
        ck_assert_int_eq(x->n_hot, y->n_hot);
        ck_assert_mem_eq(x->hot, y->hot, (size_t)x->n_hot * sizeof *x->hot);
        ck_assert_mem_eq(x->on_gpu, y->on_gpu, (size_t)a->n_ff);
        ck_assert_double_eq_tol(x->served, y->served, 1e-12);
        ck_assert_uint_eq(x->gpu_bytes, y->gpu_bytes);
        ck_assert_uint_eq(x->cpu_bytes, y->cpu_bytes);
    }
}

static void expect_error(const char *what, const char *want)
{
    ck_assert_msg(strstr(hc_last_error(), want) != NULL, "%s: error \"%s\" lacks \"%s\"", what,
                  hc_last_error(), want);
    ck_assert_ptr_null(strchr(hc_last_error(), '\n'));
}

/* ---- the fill of the non-neuron items -------------------------------------- */
START_TEST(budget_zero_places_nothing)
{
    toy t;
    toy_init(&t, 3, 64, 16);
    toy_sizes(&t, 1000, 200, 16, 512, 12, 4000);
    hc_plan *p = solve(&t, 0);
    check_solved(&t, p, 0);
    for (int l = 0; l < 3; l++) {
        expect_flags(p, l, 0, 0, 0, 0);
        ck_assert_int_eq(p->layers[l].n_hot, 0);
        ck_assert_ptr_nonnull(p->layers[l].hot);
        ck_assert_double_eq(p->layers[l].served, 0);
    }
    ck_assert_int_eq(p->output, 0);
    ck_assert_uint_eq(p->gpu_bytes, 0);
    /* 3 * (1000 + 200 + 16 + 512 + 64 * 12) + 4000 */
    ck_assert_uint_eq(p->cpu_bytes, 3 * (1000 + 200 + 16 + 512 + 768) + 4000);
    ck_assert_double_eq(p->served, 0);
    hc_plan_free(p);
}
END_TEST

START_TEST(budget_attention_only)
{
    toy t;
    toy_init(&t, 3, 64, 16);
    /* Every other item is bigger than any leftover below. */
    toy_sizes(&t, 0, 5000, 5000, 5000, 5000, 5000);
    t.l[0].attn_bytes = 100;
    t.l[1].attn_bytes = 200;
    t.l[2].attn_bytes = 300;
    /* Exactly all attention. */
    hc_plan *p = solve(&t, 600);
    check_solved(&t, p, 600);
    for (int l = 0; l < 3; l++) {
        expect_flags(p, l, 1, 0, 0, 0);
        ck_assert_int_eq(p->layers[l].n_hot, 0);
    }
    ck_assert_int_eq(p->output, 0);
    ck_assert_uint_eq(p->gpu_bytes, 600);
    hc_plan_free(p);
    /* The attention of layers 0 and 1 only: 100 + 200. */
    p = solve(&t, 300);
    check_solved(&t, p, 300);
    expect_flags(p, 0, 1, 0, 0, 0);
    expect_flags(p, 1, 1, 0, 0, 0);
    expect_flags(p, 2, 0, 0, 0, 0);
    ck_assert_uint_eq(p->gpu_bytes, 300);
    hc_plan_free(p);
    /* 599: layers 0 and 1 (300), layer 2's 300 no longer fits in 299. */
    p = solve(&t, 599);
    check_solved(&t, p, 599);
    expect_flags(p, 2, 0, 0, 0, 0);
    ck_assert_uint_eq(p->gpu_bytes, 300);
    hc_plan_free(p);
}
END_TEST

START_TEST(skip_and_continue)
{
    toy t;
    toy_init(&t, 3, 32, 32);
    toy_sizes(&t, 100, 30, 8, 4, 1000, 10);
    t.l[1].attn_bytes = 500;
    t.l[1].pred_bytes = 0; /* no predictor in layer 1 */
    /* budget 250:
     *   attn   100 (left 150), 500 skipped, 100 (left 50)
     *   pred   30 (left 20), layer 1 has none, 30 skipped
     *   norm   8 (12), 8 (4), 8 skipped
     *   output 10 skipped
     *   kv     4 (0), skipped, skipped
     *   neurons (1000 bytes each): none */
    hc_plan *p = solve(&t, 250);
    check_solved(&t, p, 250);
    expect_flags(p, 0, 1, 1, 1, 1);
    expect_flags(p, 1, 0, 0, 1, 0);
    expect_flags(p, 2, 1, 0, 0, 0);
    ck_assert_int_eq(p->output, 0);
    ck_assert_uint_eq(p->gpu_bytes, 250);
    hc_plan_free(p);
    /* budget 263:
     *   attn   100 (left 163), 500 skipped, 100 (63)
     *   pred   30 (33), none, 30 (3)
     *   norms, output and KV: nothing fits in 3 */
    p = solve(&t, 263);
    check_solved(&t, p, 263);
    expect_flags(p, 0, 1, 1, 0, 0);
    expect_flags(p, 1, 0, 0, 0, 0);
    expect_flags(p, 2, 1, 1, 0, 0);
    ck_assert_uint_eq(p->gpu_bytes, 260);
    hc_plan_free(p);
    /* budget 294: attn 200 (94), pred 60 (34), norms 24 (10), then the
     * output head (10) before any KV (0 left). */
    p = solve(&t, 294);
    check_solved(&t, p, 294);
    expect_flags(p, 0, 1, 1, 1, 0);
    expect_flags(p, 1, 0, 0, 1, 0);
    expect_flags(p, 2, 1, 1, 1, 0);
    ck_assert_int_eq(p->output, 1);
    ck_assert_uint_eq(p->gpu_bytes, 294);
    hc_plan_free(p);
}
END_TEST

/* ---- neuron groups ------------------------------------------------------------ */
START_TEST(group_default_size)
{
    static const struct {
        int64_t n_ff;
        int group;
    } cases[] = {
        /* n_ff / 8, down to a multiple of 32, within [32, 256] */
        {8, 32}, {100, 32}, {384, 32}, {512, 64}, {1024, 128}, {1000, 96},
        {2048, 256}, {11008, 256},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_place_layer_in l = {.neuron_bytes = 1};
        hc_place_in in = {.n_layer = 1, .n_ff = cases[i].n_ff, .layers = &l};
        hc_plan *p = NULL;
        ck_assert_int_eq(hc_plan_solve(&in, &p), 0);
        ck_assert_msg(p->group == cases[i].group, "n_ff %lld: group %d, expected %d",
                      (long long)cases[i].n_ff, p->group, cases[i].group);
        hc_plan_free(p);
    }
}
END_TEST

START_TEST(group_rounding)
{
    toy t;
    /* n_ff 100 in groups of 32: 32, 32, 32 and a last group of 4. */
    toy_init(&t, 1, 100, 32);
    toy_sizes(&t, 50, 0, 2, 8, 10, 40); /* items: 50 + 2 + 40 + 8 = 100 */
    const uint64_t items = 100, grp = 320;
    static const struct {
        uint64_t extra;
        int64_t hot;
    } cases[] = {
        {0, 0},           {grp - 1, 0},          {grp, 32},       {2 * grp - 1, 32},
        {2 * grp, 64},    {3 * grp - 1, 64},     {3 * grp, 96},   {3 * grp + 39, 96},
        {3 * grp + 40, 100}, {10 * grp, 100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_plan *p = solve(&t, items + cases[i].extra);
        check_solved(&t, p, items + cases[i].extra);
        expect_flags(p, 0, 1, 0, 1, 1);
        ck_assert_int_eq(p->output, 1);
        ck_assert_msg(p->layers[0].n_hot == cases[i].hot, "budget +%llu: %lld hot, expected %lld",
                      (unsigned long long)cases[i].extra, (long long)p->layers[0].n_hot,
                      (long long)cases[i].hot);
        /* No frequencies: the lowest ids. */
        expect_hot(p, 0, 0, (int)cases[i].hot, 0, 0);
        /* served = hot / n_ff with every neuron alike */
        ck_assert_double_eq_tol(p->layers[0].served, cases[i].hot / 100.0, 1e-12);
        hc_plan_free(p);
    }
}
END_TEST

START_TEST(group_ties_fill_layers_evenly)
{
    toy t;
    toy_init(&t, 2, 64, 16);
    toy_sizes(&t, 0, 0, 0, 0, 1, 0);
    /* Equal frequencies everywhere: group 0 of each layer, then group 1 ... */
    hc_plan *p = solve(&t, 3 * 16);
    check_solved(&t, p, 48);
    expect_hot(p, 0, 0, 32, 0, 0);
    expect_hot(p, 1, 0, 16, 0, 0);
    /* Zero-byte items fit any budget (the predictor of 0 bytes is absent). */
    expect_flags(p, 0, 1, 0, 1, 1);
    ck_assert_int_eq(p->output, 1);
    hc_plan_free(p);
}
END_TEST

/* Frequencies where the answer is known:
 *   layer 0: ids 0..15 fire 100, the rest 1          (1 byte / neuron)
 *   layer 1: ids 48..63 fire 90, ids 0..15 fire 80, rest 0 (1 byte)
 *   layer 2: all fire 50                               (2 bytes / neuron)
 * Groups of 16, mass per byte:
 *   L0g0 100, L1g0 90 (ids 48..63), L1g1 80 (ids 0..15), L2g0..3 25,
 *   L0g1..3 1, L1g2..3 0.  Group bytes: 16 in layers 0 and 1, 32 in 2. */
static void hot_toy(toy *t)
{
    toy_init(t, 3, 64, 16);
    toy_sizes(t, 0, 0, 0, 0, 1, 0);
    t->l[2].neuron_bytes = 2;
    toy_use_freq(t);
    for (int r = 0; r < 64; r++) {
        t->freq[0][r] = r < 16 ? 100 : 1;
        t->freq[1][r] = r >= 48 ? 90 : r < 16 ? 80 : 0;
        t->freq[2][r] = 50;
    }
}

START_TEST(greedy_picks_hottest_groups)
{
    toy t;
    hot_toy(&t);
    /* 80 bytes: L0g0 16, L1g0 16, L1g1 16, L2g0 32. */
    hc_plan *p = solve(&t, 80);
    check_solved(&t, p, 80);
    expect_hot(p, 0, 0, 16, 0, 0);
    expect_hot(p, 1, 0, 16, 48, 64);
    expect_hot(p, 2, 0, 16, 0, 0); /* ties: lowest ids */
    ck_assert_double_eq_tol(p->layers[0].served, 1600.0 / (1600 + 48), 1e-9);
    ck_assert_double_eq_tol(p->layers[1].served, 1.0, 1e-12);
    ck_assert_double_eq_tol(p->layers[2].served, 0.25, 1e-12);
    ck_assert_double_eq_tol(p->served, (1600.0 / 1648 + 1 + 0.25) / 3, 1e-9);
    ck_assert_uint_eq(p->gpu_bytes, 80);
    hc_plan_free(p);
    /* 79: after 48 bytes, L2g0 (32) does not fit in 31 and closes layer 2;
     * L0g1 (16) still does (left 15); nothing else fits. */
    p = solve(&t, 79);
    check_solved(&t, p, 79);
    expect_hot(p, 0, 0, 32, 0, 0);
    expect_hot(p, 1, 0, 16, 48, 64);
    expect_hot(p, 2, 0, 0, 0, 0);
    ck_assert_uint_eq(p->gpu_bytes, 64);
    hc_plan_free(p);
    /* 47: L0g0, L1g0, then L1g1 does not fit (15 left). */
    p = solve(&t, 47);
    check_solved(&t, p, 47);
    expect_hot(p, 0, 0, 16, 0, 0);
    expect_hot(p, 1, 48, 64, 0, 0);
    expect_hot(p, 2, 0, 0, 0, 0);
    hc_plan_free(p);
}
END_TEST

/* Mass per byte, not mass: layer 0's neurons fire 60 times but cost 4
 * bytes (15 per byte), layer 1's fire 20 times at 1 byte (20 per byte). */
START_TEST(greedy_ranks_per_byte)
{
    toy t;
    toy_init(&t, 2, 64, 16);
    toy_sizes(&t, 0, 0, 0, 0, 1, 0);
    t.l[0].neuron_bytes = 4;
    toy_use_freq(&t);
    for (int r = 0; r < 64; r++) {
        t.freq[0][r] = 60;
        t.freq[1][r] = 20;
    }
    /* 64 bytes: all of layer 1 (4 groups of 16 bytes) before any of layer 0. */
    hc_plan *p = solve(&t, 64);
    check_solved(&t, p, 64);
    expect_hot(p, 0, 0, 0, 0, 0);
    expect_hot(p, 1, 0, 64, 0, 0);
    hc_plan_free(p);
    /* 64 + 64: then one group of layer 0. */
    p = solve(&t, 128);
    expect_hot(p, 0, 0, 16, 0, 0);
    expect_hot(p, 1, 0, 64, 0, 0);
    hc_plan_free(p);
}
END_TEST

START_TEST(served_zero_mass)
{
    toy t;
    toy_init(&t, 2, 32, 16);
    toy_sizes(&t, 0, 0, 0, 0, 1, 0);
    toy_use_freq(&t);
    for (int r = 0; r < 32; r++)
        t.freq[1][r] = 3; /* layer 0 never fires */
    hc_plan *p = solve(&t, 1000);
    check_solved(&t, p, 1000);
    ck_assert_int_eq(p->layers[0].n_hot, 32);
    ck_assert_double_eq(p->layers[0].served, 0);
    ck_assert_double_eq(p->layers[1].served, 1);
    ck_assert_double_eq_tol(p->served, 0.5, 1e-12);
    hc_plan_free(p);
}
END_TEST

START_TEST(plan_all_on_and_off)
{
    toy t;
    toy_init(&t, 3, 64, 0);
    toy_sizes(&t, 100, 30, 8, 40, 12, 77);
    t.l[2].pred_bytes = 0;
    for (int on = 0; on < 2; on++) {
        hc_place_in in = t.in;
        hc_plan *p = NULL;
        in.budget = 5; /* whatever the budget */
        ck_assert_int_eq(hc_plan_all(&in, on ? 7 : 0, &p), 0);
        check_consistent(&t, p);
        for (int l = 0; l < 3; l++) {
            expect_flags(p, l, on, on && l != 2, on, on);
            ck_assert_int_eq(p->layers[l].n_hot, on ? 64 : 0);
            ck_assert_double_eq(p->layers[l].served, on);
        }
        ck_assert_int_eq(p->output, on);
        ck_assert_uint_eq(on ? p->gpu_bytes : p->cpu_bytes, toy_total(&t));
        ck_assert_uint_eq(on ? p->cpu_bytes : p->gpu_bytes, 0);
        ck_assert_double_eq(p->served, on);
        ck_assert_int_eq(p->from_file, 0);
        hc_plan_free(p);
    }
    /* A budget that holds everything solves to the same as all-on. */
    hc_plan *a = NULL, *s = solve(&t, toy_total(&t));
    t.in.budget = toy_total(&t);
    ck_assert_int_eq(hc_plan_all(&t.in, 1, &a), 0);
    plans_equal(a, s);
    hc_plan_free(a);
    hc_plan_free(s);
}
END_TEST

START_TEST(bad_input)
{
    toy t;
    hc_plan *p = (hc_plan *)&t; /* must come back NULL */
    toy_init(&t, 2, 32, 0);
    toy_sizes(&t, 1, 1, 1, 1, 1, 1);
    hc_place_in in = t.in;

    ck_assert_int_eq(hc_plan_solve(NULL, &p), -1);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(hc_plan_solve(&in, NULL), -1);
    in.n_layer = 0;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("n_layer 0", "n_layer");
    in = t.in;
    in.n_ff = 0;
    ck_assert_int_eq(hc_plan_all(&in, 1, &p), -1);
    expect_error("n_ff 0", "n_ff");
    in = t.in;
    in.layers = NULL;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("layers NULL", "layers");
    in = t.in;
    in.group = -1;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("group -1", "group");
    in = t.in;
    t.l[1].neuron_bytes = 0;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("neuron_bytes 0", "layer 1: neuron_bytes");
    t.l[1].neuron_bytes = 1;
    t.l[0].kv_bytes = UINT64_MAX - 2;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("overflow", "overflow");
    t.l[0].kv_bytes = 1;
    toy_use_freq(&t);
    t.freq[1][7] = NAN;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("NaN", "layer 1: freq[7]");
    t.freq[1][7] = -1;
    ck_assert_int_eq(hc_plan_solve(&in, &p), -1);
    expect_error("negative", "layer 1: freq[7]");
    t.freq[1][7] = 1;
    ck_assert_int_eq(hc_plan_solve(&in, &p), 0);
    hc_plan_free(p);
    hc_plan_free(NULL);
}
END_TEST

/* ---- --split layers (hc_plan_layers) ---------------------------------------- */
/* 4 layers of 64 neurons: layers 0, 1, 3 take 100 + 30 + 8 + 40 + 64 * 12 =
 * 946 bytes, layer 2 (no predictor, 20-byte neurons) 100 + 8 + 40 + 64 * 20
 * = 1428; the output head 77.  In all 946 * 3 + 1428 + 77 = 4343. */
static void layers_toy(toy *t)
{
    toy_init(t, 4, 64, 0);
    toy_sizes(t, 100, 30, 8, 40, 12, 77);
    t->l[2].pred_bytes = 0;
    t->l[2].neuron_bytes = 20;
    /* Frequencies must not matter: no neuron is chosen. */
    toy_use_freq(t);
    for (int l = 0; l < 4; l++)
        for (int r = 0; r < 64; r++)
            t->freq[l][r] = (float)((r * 37 + l * 11) % 64);
}

static hc_plan *layers(const toy *t, uint64_t budget)
{
    hc_place_in in = t->in;
    hc_plan *p = NULL;
    in.budget = budget;
    ck_assert_msg(hc_plan_layers(&in, &p) == 0, "layers: %s", hc_last_error());
    ck_assert_ptr_nonnull(p);
    return p;
}

START_TEST(layers_prefix_at_budgets)
{
    toy t;
    layers_toy(&t);
    ck_assert_uint_eq(toy_total(&t), 4343);
    static const struct {
        uint64_t budget;
        int n_gpu;       /* layers 0 .. n_gpu-1 whole on the GPU */
        int output;
        uint64_t gpu;    /* bytes there */
    } cases[] = {
        {0, 0, 0, 0},
        {945, 0, 0, 0},            /* layer 0 needs 946 */
        {946, 1, 0, 946},
        {1891, 1, 0, 946},
        {1892, 2, 0, 1892},
        /* 1000 left after two layers: layer 2 (1428) does not fit, and
         * layer 3 (946), which would, stays on the CPU: a prefix. */
        {2892, 2, 0, 1892},
        {4266, 4, 0, 4266},        /* every layer, nothing left for the head */
        {4342, 4, 0, 4266},        /* 76 left: the head needs 77 */
        {4343, 4, 1, 4343},
        {1u << 30, 4, 1, 4343},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        hc_plan *p = layers(&t, cases[k].budget);
        check_solved(&t, p, cases[k].budget);
        ck_assert_int_eq(p->whole_layers, 1);
        ck_assert_uint_eq(p->capacity, 0);
        ck_assert_msg(p->output == cases[k].output && p->gpu_bytes == cases[k].gpu,
                      "budget %llu: output %d, %llu bytes on the GPU; want %d, %llu",
                      (unsigned long long)cases[k].budget, p->output,
                      (unsigned long long)p->gpu_bytes, cases[k].output,
                      (unsigned long long)cases[k].gpu);
        for (int l = 0; l < 4; l++) {
            const int on = l < cases[k].n_gpu;
            expect_flags(p, l, on, on && l != 2, on, on);
            ck_assert_msg(p->layers[l].n_hot == (on ? 64 : 0), "budget %llu layer %d: %lld hot",
                          (unsigned long long)cases[k].budget, l,
                          (long long)p->layers[l].n_hot);
            ck_assert_double_eq(p->layers[l].served, on);
        }
        hc_plan_free(p);
    }
    /* All of it is the all-on plan. */
    hc_plan *a = NULL, *l = layers(&t, 4343);
    t.in.budget = 4343;
    ck_assert_int_eq(hc_plan_all(&t.in, 1, &a), 0);
    plans_equal(a, l);
    hc_plan_free(a);
    hc_plan_free(l);
    /* The neuron split of the same budget is another plan: there, every
     * attention goes first (the comparison --split makes). */
    hc_plan *s = solve(&t, 1892);
    ck_assert_int_eq(s->whole_layers, 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(s->layers[i].attn, 1);
    hc_plan_free(s);
}
END_TEST

START_TEST(layers_bad_input)
{
    toy t;
    hc_plan *p = (hc_plan *)&t; /* must come back NULL */
    layers_toy(&t);
    ck_assert_int_eq(hc_plan_layers(NULL, &p), -1);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(hc_plan_layers(&t.in, NULL), -1);
    t.l[1].neuron_bytes = 0;
    p = (hc_plan *)&t;
    ck_assert_int_eq(hc_plan_layers(&t.in, &p), -1);
    ck_assert_ptr_null(p);
    expect_error("neuron_bytes 0", "layer 1: neuron_bytes");
}
END_TEST

/* ---- gpuidx files ---------------------------------------------------------- */
static const char *tmp_file(const char *name)
{
    return hc_test_path(hc_test_tmpdir(), name);
}

START_TEST(gpuidx_layout)
{
    toy t;
    hot_toy(&t);
    hc_plan *p = solve(&t, 79); /* layer 2 has no GPU neuron */
    const char *path = tmp_file("layout.gpuidx");
    ck_assert_msg(hc_plan_save_gpuidx(p, path) == 0, "%s", hc_last_error());
    char err[512], arch[64];
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    ck_assert_str_eq(g->magic, "PWRI");
    ck_assert_uint_eq(g->version, 3);
    ck_assert_int_eq(hc_gguf_get_strbuf(g, "general.architecture", arch, sizeof arch), 0);
    ck_assert_str_eq(arch, "generic.gpu_index");
    uint32_t blocks;
    ck_assert_int_eq(hc_gguf_get_u32(g, "generic.gpu_index.block_count", &blocks), 0);
    ck_assert_uint_eq(blocks, 3);
    int64_t k = hc_gguf_find_key(g, "split.vram_capacity");
    ck_assert_int_ge(k, 0);
    ck_assert_uint_eq(g->kv[k].type, HC_GGUF_U64);
    uint64_t cap;
    memcpy(&cap, g->kv[k].data, 8);
    ck_assert_uint_eq(cap, 79);
    ck_assert_uint_eq(g->n_tensors, 6);
    static const int n_hot[3] = {32, 32, 0};
    for (int l = 0; l < 3; l++) {
        char name[64];
        const hc_gguf_tensor *ti = &g->tensors[2 * l], *tb = &g->tensors[2 * l + 1];
        snprintf(name, sizeof name, "blk.%d.gpu_idx", l);
        ck_assert_str_eq(ti->name, name);
        snprintf(name, sizeof name, "blk.%d.gpu_bucket", l);
        ck_assert_str_eq(tb->name, name);
        ck_assert_uint_eq(ti->type, HC_GGML_TYPE_I32);
        ck_assert_uint_eq(tb->type, HC_GGML_TYPE_I32);
        /* On disk I32 is PowerInfer's id 18, or PowerInfer cannot load it. */
        uint32_t raw[2] = {0, 0};
        ck_assert_int_eq(hc_test_raw_tensor_type(path, ti->name, &raw[0], NULL), 0);
        ck_assert_int_eq(hc_test_raw_tensor_type(path, tb->name, &raw[1], NULL), 0);
        ck_assert_uint_eq(raw[0], 18);
        ck_assert_uint_eq(raw[1], 18);
        ck_assert_uint_eq(ti->ne[0], 64);
        ck_assert_uint_eq(tb->ne[0], (uint64_t)n_hot[l]);
        int32_t v[64];
        memcpy(v, ti->data, sizeof v);
        int64_t prev = -1, j = 0;
        for (int r = 0; r < 64; r++) {
            /* layer 0: ids 0..31; layer 1: 0..15 and 48..63; layer 2: none */
            int want = l == 0 ? r < 32 : l == 1 ? (r < 16 || r >= 48) : 0;
            ck_assert_int_eq(v[r], want);
            if (want) {
                int32_t id;
                memcpy(&id, (const uint8_t *)tb->data + 4 * j++, 4);
                ck_assert_int_eq(id, r);
                ck_assert_int_gt(id, prev);
                prev = id;
            }
        }
        ck_assert_int_eq(j, n_hot[l]);
    }
    hc_gguf_close(g);
    hc_plan_free(p);
}
END_TEST

static hc_plan *load(const toy *t, const char *path, uint64_t budget, hc_gpuidx_load *how)
{
    hc_place_in in = t->in;
    hc_plan *p = NULL;
    in.budget = budget;
    ck_assert_msg(hc_plan_load_gpuidx(path, &in, &p, how) == 0, "load %s: %s", path,
                  hc_last_error());
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->from_file,
                     how->outcome == HC_GPUIDX_REUSED || how->outcome == HC_GPUIDX_SAME_SPLIT);
    return p;
}

/* split.vram_capacity as the file holds it. */
static uint64_t saved_capacity(const char *path)
{
    char err[512];
    uint64_t cap;
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    int64_t k = hc_gguf_find_key(g, "split.vram_capacity");
    ck_assert(k >= 0 && g->kv[k].type == HC_GGUF_U64);
    memcpy(&cap, g->kv[k].data, 8);
    hc_gguf_close(g);
    return cap;
}

/* hot_toy with items: attention 10, ffn_norm 1 and KV 3 per layer, output
 * 5: 47 bytes, all placed once the budget reaches them. */
static uint64_t items_toy(toy *t)
{
    hot_toy(t);
    for (int l = 0; l < 3; l++) {
        t->l[l].attn_bytes = 10;
        t->l[l].ffn_norm_bytes = 1;
        t->l[l].kv_bytes = 3;
    }
    t->in.output_bytes = 5;
    return 3 * (10 + 1 + 3) + 5;
}

START_TEST(gpuidx_round_trip)
{
    toy t;
    hc_gpuidx_load how;
    const uint64_t items = items_toy(&t); /* their fill is redone on load */
    const char *path = tmp_file("round.gpuidx");
    for (uint64_t b = 0; b <= items + 160; b += 13) {
        hc_plan *s = solve(&t, b);
        ck_assert_int_eq(hc_plan_save_gpuidx(s, path), 0);
        /* The capacity saved is what the budget left for neurons. */
        if (b >= items)
            ck_assert_uint_eq(saved_capacity(path), b - items);
        hc_plan *p = load(&t, path, b, &how);
        ck_assert_int_eq(how.outcome, HC_GPUIDX_REUSED);
        ck_assert_uint_eq(how.capacity, how.saved_capacity);
        check_consistent(&t, p);
        plans_equal(s, p);
        hc_plan_free(p);
        hc_plan_free(s);
    }
    /* A file from PowerInfer (or an earlier run) whose split is not what we
     * would solve, for the capacity this budget leaves: the split is taken
     * as is; bytes and served recomputed. */
    hc_plan *s = solve(&t, items + 80);
    hc_place_layer *l1 = &s->layers[1];
    memset(l1->on_gpu, 0, 64);
    l1->on_gpu[5] = l1->on_gpu[63] = 1;
    l1->hot[0] = 5;
    l1->hot[1] = 63;
    l1->n_hot = 2;
    ck_assert_int_eq(hc_plan_save_gpuidx(s, path), 0);
    hc_plan *p = load(&t, path, items + 80, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_REUSED);
    check_consistent(&t, p);
    expect_hot(p, 0, 0, 16, 0, 0);
    expect_hot(p, 1, 5, 6, 63, 64);
    expect_hot(p, 2, 0, 16, 0, 0);
    ck_assert_double_eq_tol(p->layers[1].served, 170.0 / 2720, 1e-9);
    ck_assert_uint_eq(p->budget, items + 80);
    ck_assert_uint_eq(p->gpu_bytes, items + 16 + 2 + 32);
    hc_plan_free(p);
    hc_plan_free(s);
}
END_TEST

/* The same neurons on the GPU, whatever the other items. */
static int same_neurons(const hc_plan *a, const hc_plan *b)
{
    for (int l = 0; l < a->n_layer; l++)
        if (a->layers[l].n_hot != b->layers[l].n_hot ||
            memcmp(a->layers[l].on_gpu, b->layers[l].on_gpu, (size_t)a->n_ff) != 0)
            return 0;
    return 1;
}

/* Issue 12 item 10: a split solved for a small budget was kept under a much
 * larger one.  Any other capacity solves afresh, larger or smaller; the file
 * is kept only where that fresh solve is the file's split (SAME_SPLIT). */
START_TEST(gpuidx_other_budget_resolves)
{
    toy t;
    hc_gpuidx_load how;
    hot_toy(&t); /* no items: the capacity is the budget */
    const char *path = tmp_file("other.gpuidx");
    static const uint64_t saved_at[] = {200, 80};
    static const uint64_t budgets[] = {1000000, 199, 160, 81, 79, 47, 0};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
            hc_plan *s = solve(&t, saved_at[k]);
            ck_assert_int_eq(hc_plan_save_gpuidx(s, path), 0);
            hc_plan_free(s);
            hc_plan *p = load(&t, path, budgets[i], &how);
            hc_plan *at_saved = solve(&t, saved_at[k]);
            s = solve(&t, budgets[i]);
            const int want = same_neurons(at_saved, s) ? HC_GPUIDX_SAME_SPLIT
                                                       : HC_GPUIDX_OTHER_CAPACITY;
            ck_assert_int_eq(how.outcome, want);
            hc_plan_free(at_saved);
            ck_assert_uint_eq(how.saved_capacity, saved_at[k]);
            ck_assert_uint_eq(how.capacity, budgets[i]);
            plans_equal(s, p);
            if (want == HC_GPUIDX_OTHER_CAPACITY)
                check_solved(&t, p, budgets[i]);
            else
                check_consistent(&t, p);
            hc_plan_free(s);
            hc_plan_free(p);
        }
    /* 80 bytes: L0g0, L1g0, L1g1 and L2g0 (greedy_picks_hottest_groups);
     * at 1000000 everything: the saved 80-byte split is not kept. */
    hc_plan *s = solve(&t, 80);
    ck_assert_int_eq(hc_plan_save_gpuidx(s, path), 0);
    hc_plan_free(s);
    hc_plan *p = load(&t, path, 1000000, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_OTHER_CAPACITY);
    ck_assert_int_eq(p->layers[0].n_hot + p->layers[1].n_hot + p->layers[2].n_hot, 3 * 64);
    hc_plan_free(p);
    /* 81 bytes (a default budget that moved by a byte): no further group of
     * 16 or 32 bytes fits, so the fresh solve is the file's split: kept. */
    p = load(&t, path, 81, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_SAME_SPLIT);
    ck_assert_int_eq(p->from_file, 1);
    hc_plan_free(p);
    /* 79: the file's 80 bytes of neurons no longer fit. */
    p = load(&t, path, 79, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_OTHER_CAPACITY);
    hc_plan_free(p);
}
END_TEST

/* Reuse goes by the room left for neurons, not by the budget: with
 * attention items of 10, a budget of 25 places two of them and one of 35
 * three, both leaving 5 bytes; a budget of 26 leaves 6, still too little for
 * a group of 32 neurons (the same split: kept), one of 67 leaves 37. */
START_TEST(gpuidx_same_capacity_reused)
{
    toy t;
    hc_gpuidx_load how;
    toy_init(&t, 3, 64, 0);
    toy_sizes(&t, 10, 0, 0, 0, 1, 0);
    const char *path = tmp_file("same.gpuidx");
    hc_plan *s = solve(&t, 25);
    ck_assert_uint_eq(s->capacity, 5);
    ck_assert_int_eq(hc_plan_save_gpuidx(s, path), 0);
    hc_plan_free(s);
    hc_plan *p = load(&t, path, 35, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_REUSED);
    ck_assert_uint_eq(how.capacity, 5);
    ck_assert_int_eq(p->layers[2].attn, 1);
    hc_plan_free(p);
    p = load(&t, path, 26, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_SAME_SPLIT);
    ck_assert_uint_eq(how.saved_capacity, 5);
    ck_assert_uint_eq(how.capacity, 6);
    hc_plan_free(p);
    p = load(&t, path, 67, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_OTHER_CAPACITY);
    ck_assert_uint_eq(how.capacity, 37);
    ck_assert_int_eq(p->layers[0].n_hot, 32);
    hc_plan_free(p);
}
END_TEST

/* A hand-written gpuidx: layers of n_ff, idx[l] / bucket[l] (nb[l] ids);
 * arch NULL / cap < 0 leave that key out. */
static void write_gpuidx(const char *path, const char *arch, int blocks, int64_t cap, int n_layer,
                         int64_t n_ff, int32_t idx[][8], int32_t bucket[][8], const int *nb,
                         uint32_t idx_type)
{
    char err[512], name[64];
    hc_gguf_writer *w = hc_gguf_writer_new("PWRI", 3, 32);
    ck_assert_ptr_nonnull(w);
    if (arch)
        ck_assert_int_eq(hc_gguf_writer_set_str(w, "general.architecture", arch), 0);
    if (blocks >= 0)
        ck_assert_int_eq(hc_gguf_writer_set_u32(w, "generic.gpu_index.block_count",
                                                (uint32_t)blocks), 0);
    if (cap >= 0) {
        uint64_t c = (uint64_t)cap;
        ck_assert_int_eq(hc_gguf_writer_set_scalar(w, "split.vram_capacity", HC_GGUF_U64, &c), 0);
    }
    for (int l = 0; l < n_layer; l++) {
        uint64_t ne1[1] = {(uint64_t)n_ff}, ne2[1] = {(uint64_t)nb[l]};
        snprintf(name, sizeof name, "blk.%d.gpu_idx", l);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, name, 1, ne1, idx_type), 0);
        snprintf(name, sizeof name, "blk.%d.gpu_bucket", l);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, name, 1, ne2, HC_GGML_TYPE_I32), 0);
    }
    ck_assert_msg(hc_gguf_writer_begin(w, path, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < n_layer; l++) {
        ck_assert_int_eq(hc_gguf_writer_write_data(w, idx[l], 4 * (uint64_t)n_ff, err, sizeof err),
                         0);
        ck_assert_int_eq(
            hc_gguf_writer_write_data(w, bucket[l], 4 * (uint64_t)nb[l], err, sizeof err), 0);
    }
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
}

static void expect_load_fail(const toy *t, const char *path, uint64_t budget, const char *want)
{
    hc_place_in in = t->in;
    hc_plan *p = (hc_plan *)t;
    hc_gpuidx_load how = {.outcome = -1};
    in.budget = budget;
    ck_assert_msg(hc_plan_load_gpuidx(path, &in, &p, &how) == -1, "%s loaded, expected \"%s\"",
                  path, want);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_NONE);
    expect_error(path, want);
    expect_error(path, path); /* names the file */
}

START_TEST(gpuidx_faults)
{
    toy t;
    /* 2 layers of 8 neurons, 1 byte each, no items. */
    toy_init(&t, 2, 8, 0);
    toy_sizes(&t, 0, 0, 0, 0, 1, 0);
    int32_t idx[2][8] = {{1, 0, 1, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0}};
    int32_t bucket[2][8] = {{0, 2}, {0}};
    int nb[2] = {2, 0};
    const char *path = tmp_file("fault.gpuidx");
    hc_gpuidx_load how;

    /* The good file loads (an empty bucket included).  Its I32 tensors are
     * stored as PowerInfer's id 18, as PowerInfer's own files have them. */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    uint32_t raw = 0;
    ck_assert_int_eq(hc_test_raw_tensor_type(path, "blk.1.gpu_idx", &raw, NULL), 0);
    ck_assert_uint_eq(raw, 18);
    hc_plan *p = load(&t, path, 10, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_REUSED);
    expect_hot(p, 0, 0, 1, 2, 3);
    expect_hot(p, 1, 0, 0, 0, 0);
    hc_plan_free(p);

    /* Truncated at every few bytes: never loads, never crashes. */
    size_t len;
    char *whole = hc_test_read_file(path, &len);
    ck_assert_ptr_nonnull(whole);
    const char *cut = tmp_file("cut.gpuidx");
    for (size_t n = 0; n < len; n += 7) {
        FILE *f = fopen(cut, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(whole, 1, n, f), n);
        fclose(f);
        expect_load_fail(&t, cut, 10, cut);
    }
    free(whole);
    expect_load_fail(&t, tmp_file("missing.gpuidx"), 10, "missing.gpuidx");

    /* Shape of a different model. */
    toy t3 = t;
    t3.in.n_layer = 3;
    t3.in.layers = t3.l;
    t3.l[2].neuron_bytes = 1;
    expect_load_fail(&t3, path, 10, "generic.gpu_index.block_count");
    toy t16;
    toy_init(&t16, 2, 16, 0);
    toy_sizes(&t16, 0, 0, 0, 0, 1, 0);
    expect_load_fail(&t16, path, 10, "blk.0.gpu_idx");

    /* Keys. */
    write_gpuidx(path, "llama", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "general.architecture");
    write_gpuidx(path, NULL, 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "general.architecture");
    write_gpuidx(path, "generic.gpu_index", -1, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "generic.gpu_index.block_count");
    write_gpuidx(path, "generic.gpu_index", 2, -1, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "split.vram_capacity");

    /* Tensors. */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 1, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "blk.1.gpu_idx is missing");
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, 0 /* F32 */);
    expect_load_fail(&t, path, 10, "blk.0.gpu_idx");
    idx[1][3] = 2;
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "blk.1.gpu_idx[3] = 2");
    idx[1][3] = 1; /* gpu_idx marks 1, bucket holds 0 */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "blk.1.gpu_bucket");
    idx[1][3] = 0;
    bucket[0][0] = 2;
    bucket[0][1] = 0; /* descending */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "blk.0.gpu_bucket[1]");
    bucket[0][0] = 2;
    bucket[0][1] = 2; /* twice */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "not ascending");
    bucket[0][0] = 0;
    bucket[0][1] = 8; /* out of range */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "blk.0.gpu_bucket[1] = 8");
    bucket[0][1] = 1; /* gpu_idx[1] is 0 */
    write_gpuidx(path, "generic.gpu_index", 2, 10, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    expect_load_fail(&t, path, 10, "blk.0.gpu_idx[1] is 0");
    bucket[0][1] = 2;

    /* A split that does not fit: capacity 1 claims it fits 1 byte, the
     * file's 2 neurons need 2: solved again, not trusted. */
    write_gpuidx(path, "generic.gpu_index", 2, 1, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    p = load(&t, path, 1, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_NO_FIT);
    ck_assert_uint_eq(how.need, 2);
    ck_assert_uint_eq(how.capacity, 1);
    ck_assert_int_eq(p->layers[0].n_hot + p->layers[1].n_hot, 0);
    hc_plan_free(p);
    /* ... and with another capacity the file is solved again. */
    write_gpuidx(path, "generic.gpu_index", 2, 5, 2, 8, idx, bucket, nb, HC_GGML_TYPE_I32);
    p = load(&t, path, 1, &how);
    ck_assert_int_eq(how.outcome, HC_GPUIDX_OTHER_CAPACITY);
    ck_assert_int_eq(p->layers[0].n_hot + p->layers[1].n_hot, 0); /* group 32 > 1 byte */
    hc_plan_free(p);

    /* Bad arguments. */
    hc_place_in in = t.in;
    ck_assert_int_eq(hc_plan_load_gpuidx(NULL, &in, &p, &how), -1);
    ck_assert_int_eq(hc_plan_load_gpuidx(path, NULL, &p, &how), -1);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(hc_plan_save_gpuidx(NULL, path), -1);
}
END_TEST

/* ---- frequency sources ------------------------------------------------------- */
/* A profile-like GGUF with counts for layers [0, n_with), of n_ff each. */
static void write_counts(const char *path, int blocks, int n_with, int64_t n_ff, uint32_t type,
                         const int32_t *counts)
{
    char err[512], name[64];
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(hc_gguf_writer_set_str(w, "general.architecture", HC_PROFILE_ARCH), 0);
    if (blocks >= 0)
        ck_assert_int_eq(hc_gguf_writer_set_u32(w, HC_ACT_KEY_BLOCKS, (uint32_t)blocks), 0);
    for (int l = 0; l < n_with; l++) {
        uint64_t ne[1] = {(uint64_t)n_ff};
        snprintf(name, sizeof name, HC_ACT_TENSOR_FMT, l);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, name, 1, ne, type), 0);
    }
    ck_assert_msg(hc_gguf_writer_begin(w, path, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < n_with; l++)
        ck_assert_int_eq(hc_gguf_writer_write_data(w, counts + l * n_ff, 4 * (uint64_t)n_ff, err,
                                                   sizeof err),
                         0);
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
}

static void expect_freq_fail(const char *path, int n_layer, int64_t n_ff, const char *want)
{
    char err[512];
    float *freq = (float *)path;
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    ck_assert_int_eq(hc_place_freq_from_gguf(g, n_layer, n_ff, &freq), -1);
    ck_assert_ptr_null(freq);
    expect_error(path, want);
    hc_gguf_close(g);
}

START_TEST(freq_from_gguf)
{
    enum { L = 3, F = 40 };
    int32_t counts[L * F];
    char err[512];
    for (int i = 0; i < L * F; i++)
        counts[i] = (i * 7919) % 1000 + (i == 5 ? 16777217 : 0); /* one beyond 2^24 */
    const char *path = tmp_file("counts.gguf");
    write_counts(path, L, L, F, HC_GGML_TYPE_I32, counts);
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    float *freq = NULL;
    ck_assert_msg(hc_place_freq_from_gguf(g, L, F, &freq) == 0, "%s", hc_last_error());
    ck_assert_ptr_nonnull(freq);
    for (int i = 0; i < L * F; i++)
        ck_assert_float_eq(freq[i], (float)counts[i]);
    free(freq);
    hc_gguf_close(g);

    /* No counts at all: fine, NULL. */
    write_counts(path, -1, 0, F, HC_GGML_TYPE_I32, counts);
    g = hc_gguf_open(path, err, sizeof err);
    ck_assert_ptr_nonnull(g);
    freq = (float *)path;
    ck_assert_int_eq(hc_place_freq_from_gguf(g, L, F, &freq), 0);
    ck_assert_ptr_null(freq);
    hc_gguf_close(g);

    write_counts(path, -1, 2, F, HC_GGML_TYPE_I32, counts);
    expect_freq_fail(path, L, F, "blk.2.ffn_act_count is missing");
    write_counts(path, L, L, F, 0 /* F32 */, counts);
    expect_freq_fail(path, L, F, "blk.0.ffn_act_count");
    write_counts(path, L, L, F, HC_GGML_TYPE_I32, counts);
    expect_freq_fail(path, L, 2 * F, "blk.0.ffn_act_count");
    write_counts(path, L + 1, L, F, HC_GGML_TYPE_I32, counts);
    expect_freq_fail(path, L, F, HC_ACT_KEY_BLOCKS);
    counts[F + 3] = -4;
    write_counts(path, L, L, F, HC_GGML_TYPE_I32, counts);
    expect_freq_fail(path, L, F, "blk.1.ffn_act_count[3] = -4");
}
END_TEST

START_TEST(freq_from_packed_model)
{
    char err[512];
    hc_gguf *g = hc_gguf_open(HC_MODELS_DIR "/relu2M.powerinfer.gguf", err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    uint32_t n_layer;
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.block_count", &n_layer), 0);
    const hc_gguf_tensor *t0 = hc_gguf_find_tensor(g, "blk.0.ffn_act_count");
    ck_assert_ptr_nonnull(t0);
    float *freq = NULL;
    int64_t n_ff = (int64_t)t0->ne[0];
    ck_assert_msg(hc_place_freq_from_gguf(g, (int)n_layer, n_ff, &freq) == 0, "%s",
                  hc_last_error());
    ck_assert_ptr_nonnull(freq);
    /* Spot check against the tensor bytes of the last layer. */
    char name[64];
    snprintf(name, sizeof name, "blk.%u.ffn_act_count", n_layer - 1);
    const hc_gguf_tensor *tl = hc_gguf_find_tensor(g, name);
    ck_assert_ptr_nonnull(tl);
    for (int64_t r = 0; r < n_ff; r += 17) {
        int32_t v;
        memcpy(&v, (const uint8_t *)tl->data + 4 * r, 4);
        ck_assert_float_eq(freq[(int64_t)(n_layer - 1) * n_ff + r], (float)v);
    }
    free(freq);
    hc_gguf_close(g);
}
END_TEST

/* Layer `name`'s values as torch printed them (tests/data/pt/expected.txt:
 * "name dtype n v0 v1 ..."). */
static int expected_counts(const char *name, double *out, int max)
{
    size_t len;
    char *txt = hc_test_read_file(PT_DIR "/expected.txt", &len);
    ck_assert_ptr_nonnull(txt);
    int n = -1;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        size_t k = strlen(name);
        if (strncmp(line, name, k) || line[k] != ' ')
            continue;
        char *p = line + k + 1;
        p = strchr(p, ' '); /* skip dtype */
        ck_assert_ptr_nonnull(p);
        n = (int)strtol(p, &p, 10);
        ck_assert_int_le(n, max);
        /* Then the shape / offset fields differ per fixture: take the last n numbers. */
        int cnt = 0;
        char *q = p;
        while (*q) {
            while (*q == ' ')
                q++;
            if (!*q)
                break;
            cnt++;
            while (*q && *q != ' ')
                q++;
        }
        q = p;
        for (int skip = cnt - n; skip > 0; skip--) {
            while (*q == ' ')
                q++;
            while (*q && *q != ' ')
                q++;
        }
        for (int i = 0; i < n; i++)
            out[i] = strtod(q, &q);
        break;
    }
    free(txt);
    return n;
}

START_TEST(freq_from_activation_dir)
{
    float *freq = NULL;
    ck_assert_msg(hc_place_freq_from_activation_dir(PT_DIR "/activation", 12, 96, &freq) == 0,
                  "%s", hc_last_error());
    ck_assert_ptr_nonnull(freq);
    static const int layers[] = {0, 2, 10, 11};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        char name[64];
        double want[96];
        snprintf(name, sizeof name, "activation/activation_%d.pt", layers[i]);
        ck_assert_int_eq(expected_counts(name, want, 96), 96);
        for (int r = 0; r < 96; r++)
            ck_assert_msg(freq[layers[i] * 96 + r] == (float)want[r],
                          "layer %d neuron %d: %g, torch %g", layers[i], r,
                          (double)freq[layers[i] * 96 + r], want[r]);
    }
    free(freq);
    freq = (float *)&freq;
    ck_assert_int_eq(hc_place_freq_from_activation_dir(PT_DIR "/activation", 12, 384, &freq), -1);
    ck_assert_ptr_null(freq);
    expect_error("n_ff", "expected 384");
    ck_assert_int_eq(hc_place_freq_from_activation_dir(PT_DIR "/activation", 0, 96, &freq), -1);
    ck_assert_int_eq(hc_place_freq_from_activation_dir(PT_DIR "/nonexistent", 12, 96, &freq), -1);
    ck_assert_ptr_null(freq);
}
END_TEST

/* ---- the table ----------------------------------------------------------------- */
/* The table of plan p (NULL: none), through the public figures the tool
 * prints from (hc_plan_info, hc_plan_layer_info). */
static char *print_to_string(const hc_plan *p, const char *label)
{
    char *buf = NULL;
    size_t len = 0;
    hc_plan_info info;
    hc_plan_layer_info layers[8];
    if (p) {
        ck_assert_int_le(p->n_layer, 8);
        hc_plan_info_of(p, &info);
        for (int l = 0; l < p->n_layer; l++)
            hc_plan_layer_of(p, l, &layers[l]);
    }
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    hc_tool_print_plan(f, p ? &info : NULL, p ? layers : NULL,
                       p && p->whole_layers ? HC_SPLIT_LAYERS : HC_SPLIT_NEURONS, label);
    fclose(f);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(print_plan_table)
{
    toy t;
    hc_gpuidx_load how;
    hot_toy(&t);
    hc_plan *p = solve(&t, 79);
    char *s = print_to_string(p, "TestGPU 9000");
    /* a title, a header, 3 layers, 2 lines of totals */
    ck_assert_int_eq(count_lines(s), 7);
    ck_assert_ptr_nonnull(strstr(s, "TestGPU 9000"));
    ck_assert_ptr_nonnull(strstr(s, "32/64"));
    ck_assert_ptr_nonnull(strstr(s, "solved now"));
    ck_assert_ptr_nonnull(strstr(s, "64 of 192")); /* hot neurons in all */
    free(s);
    const char *path = tmp_file("print.gpuidx");
    ck_assert_int_eq(hc_plan_save_gpuidx(p, path), 0);
    hc_plan *q = load(&t, path, 79, &how);
    s = print_to_string(q, NULL);
    ck_assert_ptr_nonnull(strstr(s, "from the gpuidx file"));
    ck_assert_ptr_nonnull(strstr(s, "GPU"));
    ck_assert_ptr_nonnull(strstr(s, "split neurons"));
    free(s);
    toy u;
    layers_toy(&u);
    hc_plan *w = layers(&u, 1892);
    s = print_to_string(w, NULL);
    ck_assert_ptr_nonnull(strstr(s, "split layers"));
    ck_assert_ptr_nonnull(strstr(s, "no neuron split"));
    ck_assert_ptr_null(strstr(s, "neuron groups"));
    hc_plan_free(w);
    free(s);
    s = print_to_string(NULL, NULL);
    ck_assert_ptr_nonnull(strstr(s, "no plan"));
    free(s);
    hc_plan_free(q);
    hc_plan_free(p);
}
END_TEST

static Suite *placement_suite(void)
{
    Suite *s = suite_create("placement");
    TCase *ts = tcase_create("solve");
    tcase_add_test(ts, budget_zero_places_nothing);
    tcase_add_test(ts, budget_attention_only);
    tcase_add_test(ts, skip_and_continue);
    tcase_add_test(ts, group_default_size);
    tcase_add_test(ts, group_rounding);
    tcase_add_test(ts, group_ties_fill_layers_evenly);
    tcase_add_test(ts, greedy_picks_hottest_groups);
    tcase_add_test(ts, greedy_ranks_per_byte);
    tcase_add_test(ts, served_zero_mass);
    tcase_add_test(ts, plan_all_on_and_off);
    tcase_add_test(ts, bad_input);
    tcase_add_test(ts, layers_prefix_at_budgets);
    tcase_add_test(ts, layers_bad_input);
    suite_add_tcase(s, ts);
    TCase *tg = tcase_create("gpuidx");
    tcase_add_test(tg, gpuidx_layout);
    tcase_add_test(tg, gpuidx_round_trip);
    tcase_add_test(tg, gpuidx_other_budget_resolves);
    tcase_add_test(tg, gpuidx_same_capacity_reused);
    tcase_add_test(tg, gpuidx_faults);
    suite_add_tcase(s, tg);
    TCase *tf = tcase_create("stats");
    tcase_add_test(tf, freq_from_gguf);
    tcase_add_test(tf, freq_from_packed_model);
    tcase_add_test(tf, freq_from_activation_dir);
    tcase_add_test(tf, print_plan_table);
    suite_add_tcase(s, tf);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(placement_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
