/*
 * Golden end-to-end tests: the real models must reproduce the token ids and
 * first-step logits of an independent float64 reference
 * (tests/data/golden/<model>.json, made by a numpy implementation).
 *
 * Greedy ids: every id must match.  Where one differs, the test accepts it
 * only if the golden step was a near-tie in OUR logits (gap between our top
 * logit and the golden token's logit < 1e-4) and then continues with the
 * golden token (teacher forcing) so one tie does not derail the rest; the
 * number of such ties is printed.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "q6k_models.h"
#include "ref/ref.h"
#include "test_util.h"

#define MAX_IDS 512
#define NEAR_TIE 1e-4f
/* The reference is float64; we compute in float32 with float64 dots in no
 * op, so the error is float32 rounding accumulated over a few layers:
 * ~1e-6 relative is typical, 1e-4 is the bound. */
#define F32_LOGIT_REL 1e-4
/* F16 weights: each weight is rounded to 11 significant bits (relative error
 * <= 2^-11 = 4.9e-4); through a handful of layers the logits move by about
 * that much relative to their range.  Measured ~1e-3 on these models;
 * 5e-3 leaves headroom while still catching a wrong kernel (which gives
 * O(1) errors). */
#define F16_LOGIT_REL 5e-3

static hc_engine *engine;

static void engine_up(void)
{
    hc_engine_params p = hc_engine_default_params();
    p.n_threads = HC_TEST_THREADS;
    engine = hc_engine_open(&p);
    ck_assert_msg(engine != NULL, "engine: %s", hc_last_error());
}

static void engine_down(void)
{
    hc_engine_close(engine);
    engine = NULL;
}

typedef struct golden {
    json_object *root;
    int32_t bos_ids[MAX_IDS];
    int n_bos_ids;
    int32_t prompt_ids[MAX_IDS];
    int n_prompt_ids;
    int32_t prompt_greedy[MAX_IDS];
    int n_prompt_greedy;
    const char *prompt;
    json_object *logits_first_steps;
} golden;

static void golden_load(golden *g, const char *model)
{
    char name[256];
    snprintf(name, sizeof name, "golden/%s.json", model);
    g->root = hc_test_load_json(hc_test_path(HC_TEST_DATA, name));
    ck_assert_msg(g->root != NULL, "cannot read %s", name);
    json_object *bos, *fp, *o;
    ck_assert(json_object_object_get_ex(g->root, "from_bos", &bos));
    ck_assert(json_object_object_get_ex(g->root, "from_prompt", &fp));
    ck_assert(json_object_object_get_ex(bos, "greedy_ids", &o));
    g->n_bos_ids = hc_test_json_ints(o, g->bos_ids, MAX_IDS);
    ck_assert(json_object_object_get_ex(bos, "logits_first_steps", &g->logits_first_steps));
    ck_assert(json_object_object_get_ex(fp, "prompt_ids", &o));
    g->n_prompt_ids = hc_test_json_ints(o, g->prompt_ids, MAX_IDS);
    ck_assert(json_object_object_get_ex(fp, "greedy_ids", &o));
    g->n_prompt_greedy = hc_test_json_ints(o, g->prompt_greedy, MAX_IDS);
    ck_assert(json_object_object_get_ex(fp, "prompt", &o));
    g->prompt = json_object_get_string(o);
    ck_assert(g->n_bos_ids <= MAX_IDS && g->n_prompt_ids <= MAX_IDS &&
              g->n_prompt_greedy <= MAX_IDS);
}

/* Max |ours - golden| / max |golden| for one step's logits. */
static double logits_rel_err(const float *ours, json_object *gold, int n)
{
    double max_diff = 0, max_ref = 0;
    ck_assert_int_eq((int)json_object_array_length(gold), n);
    for (int i = 0; i < n; i++) {
        double r = json_object_get_double(json_object_array_get_idx(gold, (size_t)i));
        max_diff = fmax(max_diff, fabs((double)ours[i] - r));
        max_ref = fmax(max_ref, fabs(r));
    }
    return max_diff / max_ref;
}

typedef struct run_result {
    int mismatches; /* ids that differed (all near-ties, else the test failed) */
    int32_t ids[MAX_IDS];
    double worst_logit_rel;
} run_result;

/* Feed `prompt`, then decode greedily for n_expect steps comparing with
 * `expect`; check the first logits against the golden ones when given. */
static void run_greedy(const char *model_path, const int32_t *prompt, int n_prompt,
                       const int32_t *expect, int n_expect, json_object *gold_logits,
                       double logit_bound, run_result *res)
{
    hc_model *m = hc_model_load(engine, model_path, NULL);
    ck_assert_msg(m != NULL, "load %s: %s", model_path, hc_last_error());
    hc_context *c = hc_context_new(m, NULL);
    ck_assert_msg(c != NULL, "context: %s", hc_last_error());
    hc_model_desc d;
    hc_model_describe(m, &d);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    ck_assert(logits != NULL);
    memset(res, 0, sizeof *res);

    ck_assert_msg(hc_context_eval(c, prompt, n_prompt, logits) == 0, "%s", hc_last_error());
    int n_gold_steps = gold_logits ? (int)json_object_array_length(gold_logits) : 0;
    for (int step = 0; step < n_expect; step++) {
        if (step < n_gold_steps) {
            double rel = logits_rel_err(
                logits, json_object_array_get_idx(gold_logits, (size_t)step), d.n_vocab);
            res->worst_logit_rel = fmax(res->worst_logit_rel, rel);
            ck_assert_msg(rel <= logit_bound, "%s: step %d logits rel err %.3g > %.3g",
                          model_path, step, rel, logit_bound);
        }
        int ours = hc_test_argmax(logits, d.n_vocab);
        res->ids[step] = ours;
        if (ours != expect[step]) {
            float gap = logits[ours] - logits[expect[step]];
            ck_assert_msg(gap < NEAR_TIE,
                          "%s: step %d: got id %d, golden %d, and it is no near-tie "
                          "(logit gap %g)",
                          model_path, step, ours, expect[step], (double)gap);
            printf("  %s: step %d: near-tie, got %d vs golden %d (gap %.2g)\n", model_path,
                   step, ours, expect[step], (double)gap);
            res->mismatches++;
        }
        if (step + 1 < n_expect)
            ck_assert_msg(hc_context_eval(c, &expect[step], 1, logits) == 0, "%s",
                          hc_last_error());
    }
    free(logits);
    hc_context_free(c);
    hc_model_free(m);
}

static void check_model(const char *model, const char *path, double logit_bound)
{
    golden g;
    run_result r;
    golden_load(&g, model);
    int32_t bos = 1;
    run_greedy(path, &bos, 1, g.bos_ids, g.n_bos_ids, g.logits_first_steps, logit_bound, &r);
    printf("%s [%s] from BOS: %d ids, %d near-ties, worst first-step logit rel err %.3g\n",
           model, path, g.n_bos_ids, r.mismatches, r.worst_logit_rel);

    /* The prompt's ids come from our tokenizer and must equal the golden. */
    hc_model *m = hc_model_load(engine, path, NULL);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    int32_t ids[MAX_IDS];
    int n = hc_model_tokenize(m, g.prompt, strlen(g.prompt), 1, ids, MAX_IDS);
    hc_model_free(m);
    ck_assert_int_eq(n, g.n_prompt_ids);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(ids[i], g.prompt_ids[i]);
    run_greedy(path, g.prompt_ids, g.n_prompt_ids, g.prompt_greedy, g.n_prompt_greedy, NULL,
               logit_bound, &r);
    printf("%s [%s] from prompt: %d ids, %d near-ties\n", model, path, g.n_prompt_greedy,
           r.mismatches);
    json_object_put(g.root);
}

static const char *model_path(const char *model)
{
    char name[256];
    snprintf(name, sizeof name, "%s.gguf", model);
    return hc_test_path(HC_MODELS_DIR, name);
}

/* The model converted to F16 by our quantizer, in the test's tmp dir. */
static const char *f16_path(const char *model)
{
    static char out[4096];
    char name[256];
    snprintf(name, sizeof name, "%s-f16.gguf", model);
    snprintf(out, sizeof out, "%s", hc_test_path(hc_test_tmpdir(), name));
    ck_assert_msg(hc_quantize_file(model_path(model), out, HC_TYPE_F16, NULL, NULL) == 0, "%s",
                  hc_last_error());
    return out;
}

/* stories260K without output.weight: its head must fall back to the tied
 * token_embd (the shipped output.weight holds the same values, so the
 * golden ids still apply). */
static const char *untied_copy(void)
{
    static char out[4096];
    char err[512];
    snprintf(out, sizeof out, "%s", hc_test_path(hc_test_tmpdir(), "stories260K-tied.gguf"));
    hc_gguf *g = hc_gguf_open(model_path("stories260K"), err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    for (uint64_t i = 0; i < g->n_kv; i++)
        ck_assert_int_eq(hc_gguf_writer_copy_kv(w, &g->kv[i]), 0);
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, "output.weight"))
            ck_assert_int_eq(hc_gguf_writer_add_tensor(w, g->tensors[i].name,
                                                       g->tensors[i].n_dims, g->tensors[i].ne,
                                                       g->tensors[i].type),
                             0);
    ck_assert_msg(hc_gguf_writer_begin(w, out, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, "output.weight"))
            ck_assert_msg(hc_gguf_writer_write_data(w, g->tensors[i].data, g->tensors[i].n_bytes,
                                                    err, sizeof err) == 0,
                          "%s", err);
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
    hc_gguf_close(g);
    return out;
}

START_TEST(stories260K_tied_embeddings)
{
    check_model("stories260K", untied_copy(), F32_LOGIT_REL);
}
END_TEST

START_TEST(stories260K_f32)
{
    check_model("stories260K", model_path("stories260K"), F32_LOGIT_REL);
}
END_TEST

START_TEST(relu2M_f32)
{
    check_model("relu2M", model_path("relu2M"), F32_LOGIT_REL);
}
END_TEST

START_TEST(reglu1M_f32)
{
    check_model("reglu1M", model_path("reglu1M"), F32_LOGIT_REL);
}
END_TEST

START_TEST(stories260K_f16)
{
    check_model("stories260K", f16_path("stories260K"), F16_LOGIT_REL);
}
END_TEST

START_TEST(relu2M_f16)
{
    check_model("relu2M", f16_path("relu2M"), F16_LOGIT_REL);
}
END_TEST

/* hc_context_eval_all over BOS and the first golden ids: row s is the
 * reference's logits after s + 1 tokens, for every step it has (in one
 * pass, and in passes of 2 tokens: rows land where their token is). */
static void check_eval_all(const char *model, int n_batch)
{
    golden g;
    golden_load(&g, model);
    hc_model *m = hc_model_load(engine, model_path(model), NULL);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    hc_context_params cp = hc_context_default_params();
    cp.n_batch = n_batch;
    hc_context *plain = hc_context_new(m, &cp);
    cp.logits_all = 1;
    hc_context *c = hc_context_new(m, &cp);
    ck_assert_msg(c != NULL && plain != NULL, "%s", hc_last_error());
    hc_model_desc d;
    hc_model_describe(m, &d);
    const int steps = (int)json_object_array_length(g.logits_first_steps);
    ck_assert(steps >= 2 && steps <= g.n_bos_ids);
    int32_t toks[MAX_IDS];
    toks[0] = 1;
    memcpy(toks + 1, g.bos_ids, (size_t)(steps - 1) * sizeof *toks);
    float *rows = malloc((size_t)steps * d.n_vocab * sizeof *rows);
    ck_assert(rows != NULL);
    /* A context made without logits_all refuses, and says why. */
    ck_assert_int_ne(hc_context_eval_all(plain, toks, steps, rows), 0);
    ck_assert_msg(strstr(hc_last_error(), "logits_all") != NULL, "%s", hc_last_error());
    ck_assert_msg(hc_context_eval_all(c, toks, steps, rows) == 0, "%s", hc_last_error());
    for (int s = 0; s < steps; s++) {
        double rel = logits_rel_err(rows + (size_t)s * d.n_vocab,
                                    json_object_array_get_idx(g.logits_first_steps, (size_t)s),
                                    d.n_vocab);
        ck_assert_msg(rel <= F32_LOGIT_REL, "%s: eval_all row %d (batch %d): rel err %.3g",
                      model, s, n_batch, rel);
    }
    printf("%s: eval_all rows 0..%d (batch %d) match the reference's logits\n", model,
           steps - 1, n_batch);
    free(rows);
    hc_context_free(c);
    hc_context_free(plain);
    hc_model_free(m);
    json_object_put(g.root);
}

START_TEST(eval_all_rows_are_each_tokens_logits)
{
    static const char *const models[] = {"stories260K", "relu2M", "reglu1M"};
    for (int k = 0; k < 3; k++) {
        check_eval_all(models[k], 64);
        check_eval_all(models[k], 2);
    }
}
END_TEST

/* Greedy ids from BOS and the last logits, with `threads` threads and the
 * weights loaded as `weights` (hc_weights_mode). */
static void generate_ids(const char *path, int threads, int weights, int32_t *ids, int n,
                         float *last)
{
    ck_assert_int_eq(hc_engine_set_threads(engine, threads), 0);
    hc_model_params mp = hc_model_default_params();
    mp.weights = weights;
    hc_model *m = hc_model_load(engine, path, &mp);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    if (weights != HC_WEIGHTS_AUTO)
        ck_assert_int_eq(hc_model_weights_mode(m), weights);
    hc_context *c = hc_context_new(m, NULL);
    ck_assert(c != NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    int32_t tok = hc_model_token_bos(m);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(hc_context_eval(c, &tok, 1, logits) == 0, "%s", hc_last_error());
        tok = ids[i] = hc_test_argmax(logits, d.n_vocab);
    }
    memcpy(last, logits, (size_t)d.n_vocab * sizeof *logits);
    free(logits);
    hc_context_free(c);
    hc_model_free(m);
}

/* Runs A and B (threads, weights mode) of both models must give the same
 * 100 greedy ids and bit-identical last logits. */
static void expect_identical_runs(int threads_a, int weights_a, int threads_b, int weights_b,
                                  const char *what)
{
    static const char *const models[] = {"stories260K", "relu2M"};
    for (int k = 0; k < 2; k++) {
        int32_t a[100], b[100];
        /* Both large enough for either vocabulary; zeroed so the tail
         * beyond a smaller vocabulary compares equal. */
        float la[4096] = {0}, lb[4096] = {0};
        generate_ids(model_path(models[k]), threads_a, weights_a, a, 100, la);
        generate_ids(model_path(models[k]), threads_b, weights_b, b, 100, lb);
        for (int i = 0; i < 100; i++)
            ck_assert_msg(a[i] == b[i], "%s: %s: ids differ at step %d", models[k], what, i);
        ck_assert_msg(memcmp(la, lb, sizeof la) == 0, "%s: %s: logits not bit-identical",
                      models[k], what);
    }
}

START_TEST(threads_agree)
{
    expect_identical_runs(1, HC_WEIGHTS_AUTO, 2, HC_WEIGHTS_AUTO, "-t 1 vs -t 2");
}
END_TEST

/* The file mapped and the file read into huge-page memory are the same
 * bytes. */
START_TEST(weights_modes_agree)
{
    expect_identical_runs(2, HC_WEIGHTS_MMAP, 2, HC_WEIGHTS_READ, "mapped vs read weights");
    expect_identical_runs(2, HC_WEIGHTS_MOVE, 2, HC_WEIGHTS_READ, "moving vs read weights");
}
END_TEST

/* A batched prompt must give the same logits as feeding it token by token. */
START_TEST(batch_equals_sequential)
{
    golden g;
    golden_load(&g, "relu2M");
    hc_model *m = hc_model_load(engine, model_path("relu2M"), NULL);
    ck_assert(m != NULL);
    hc_context_params cp = hc_context_default_params();
    cp.n_batch = 4; /* forces several batches, the last one partial */
    hc_context *cb = hc_context_new(m, &cp);
    hc_context *cs = hc_context_new(m, NULL);
    ck_assert(cb && cs);
    float lb[4096], ls[4096];
    ck_assert_int_eq(hc_context_eval(cb, g.prompt_ids, g.n_prompt_ids, lb), 0);
    for (int i = 0; i < g.n_prompt_ids; i++)
        ck_assert_int_eq(hc_context_eval(cs, &g.prompt_ids[i], 1, ls), 0);
    double max_diff = 0;
    for (int i = 0; i < 4096; i++)
        max_diff = fmax(max_diff, fabs((double)lb[i] - ls[i]));
    ck_assert_msg(max_diff < 1e-3, "batched vs sequential logits differ by %g", max_diff);
    hc_context_free(cb);
    hc_context_free(cs);
    hc_model_free(m);
    json_object_put(g.root);
}
END_TEST

START_TEST(context_overflow_is_an_error)
{
    hc_model *m = hc_model_load(engine, model_path("stories260K"), NULL);
    ck_assert(m != NULL);
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = 8;
    hc_context *c = hc_context_new(m, &cp);
    ck_assert(c != NULL);
    int32_t toks[9] = {1, 403, 407, 261, 378, 432, 383, 286, 261};
    ck_assert_int_eq(hc_context_eval(c, toks, 8, NULL), 0);
    ck_assert_int_lt(hc_context_eval(c, toks, 1, NULL), 0);
    ck_assert_msg(strstr(hc_last_error(), "context") != NULL, "%s", hc_last_error());
    hc_context_free(c);
    hc_model_free(m);
}
END_TEST

/* ---- Q6_K: PowerInfer's q4 output head ------------------------------------ */

/*
 * PowerInfer's `quantize ... Q4_0` stores output.weight as Q6_K when n_embd
 * is a multiple of 256 (every real model).  Such a file, made at test time
 * (q6k_models.c), must run and agree with its twin whose head holds the
 * same values in F32.  The two differ only in how the CPU computes the
 * head: the F32 kernel multiplies float x, the Q6_K kernel x quantized to
 * 8 bits per block of 32 (NMSE ~1.5e-5 of each logit's product energy in
 * test_conformance, i.e. ~0.4% rms, and up to ~4x that at the worst of
 * 512 logits): measured 8.5e-3 of max |logit| here; bound 2e-2.  Every
 * weight in Q6_K (Q8_0 where rows do not allow it) against all-F32 puts
 * that error into every product of both layers: measured 1.4e-2; bound
 * 5e-2.  Dense FFN there, so that no predictor decision flips on the
 * difference.  (Exact figures: the runs are deterministic.)
 */
#define Q6K_HEAD_REL 2e-2
#define Q6K_ALL_REL 5e-2
#define Q6K_STEPS 48

static void q6k_pair(const char *a_path, const char *b_path, int sparse, double bound,
                     const char *what)
{
    hc_model_params mp = hc_model_default_params();
    mp.sparse = sparse;
    hc_model *a = hc_model_load(engine, a_path, &mp), *b = hc_model_load(engine, b_path, &mp);
    ck_assert_msg(a && b, "%s: %s", what, hc_last_error());
    const char *text = "Once upon a time, there was a little dog";
    int32_t prompt[64];
    const int n_prompt = hc_model_tokenize(b, text, strlen(text), 1, prompt, 64);
    ck_assert(n_prompt > 1 && n_prompt <= 64);
    hc_q6k_cmp r1, r2;
    int32_t bos = hc_model_token_bos(b);
    hc_q6k_compare(a, b, &bos, 1, Q6K_STEPS, bound, &r1);
    hc_q6k_compare(a, b, prompt, n_prompt, Q6K_STEPS, bound, &r2);
    printf("%s: %d + %d greedy steps, %d + %d near-ties, worst logit difference %.3g + %.3g of "
           "max |logit| (bound %.0g)\n",
           what, r1.steps, r2.steps, r1.ties, r2.ties, r1.worst_rel, r2.worst_rel, bound);
    hc_model_free(a);
    hc_model_free(b);
}

START_TEST(q6_k_head_vs_f32_head)
{
    const hc_q6k_models *qm = hc_q6k_models_get();
    q6k_pair(qm->head_q6k, qm->head_f32, HC_SPARSE_AUTO, Q6K_HEAD_REL,
             "q4_0 + q6_k head vs f32 head, predictor");
    q6k_pair(qm->head_q6k, qm->head_f32, HC_SPARSE_OFF, Q6K_HEAD_REL,
             "q4_0 + q6_k head vs f32 head, dense");
}
END_TEST

START_TEST(q6_k_everywhere_vs_f32)
{
    const hc_q6k_models *qm = hc_q6k_models_get();
    q6k_pair(qm->all_q6k, qm->all_f32, HC_SPARSE_OFF, Q6K_ALL_REL, "q6_k weights vs f32, dense");
}
END_TEST

/* A PWRI file whose blk.0.ffn_down_t is Q6_K: its rows would be summed by
 * axpy_rows, which no plugin has for Q6_K, so the load must refuse it with
 * a message naming the tensor (not fail at the first token, or crash). */
START_TEST(q6_k_down_t_refused)
{
    const hc_q6k_models *qm = hc_q6k_models_get();
    const char *name = "blk.0.ffn_down_t.weight";
    char out[4096], err[512];
    snprintf(out, sizeof out, "%s", hc_test_path(hc_test_tmpdir(), "q6k-down-t.gguf"));
    hc_gguf *g = hc_gguf_open(qm->head_q6k, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    hc_gguf_writer *w = hc_gguf_writer_new(g->magic, g->version, (uint32_t)g->alignment);
    for (uint64_t i = 0; i < g->n_kv; i++)
        ck_assert_int_eq(hc_gguf_writer_copy_kv(w, &g->kv[i]), 0);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne,
                                                   strcmp(t->name, name) ? t->type
                                                                         : HC_TYPE_Q6_K),
                         0);
    }
    ck_assert_msg(hc_gguf_writer_begin(w, out, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        if (strcmp(t->name, name)) {
            ck_assert_int_eq(hc_gguf_writer_write_data(w, t->data, t->n_bytes, err, sizeof err),
                             0);
            continue;
        }
        const int64_t cols = (int64_t)t->ne[0];
        float row[HC_Q6K_N_EMBD];
        uint8_t q[HC_Q6K_N_EMBD]; /* more than a Q6_K row of 256 needs */
        ck_assert_int_eq(cols, HC_Q6K_N_EMBD);
        for (uint64_t r = 0; r < t->ne[1]; r++) {
            hc_scalar_dequantize_row((hc_type)t->type,
                                     (const uint8_t *)t->data + r * hc_type_row_size(t->type, cols),
                                     row, cols);
            hc_scalar_quantize_row(HC_TYPE_Q6_K, row, q, cols);
            ck_assert_int_eq(hc_gguf_writer_write_data(w, q, hc_type_row_size(HC_TYPE_Q6_K, cols),
                                                       err, sizeof err),
                             0);
        }
    }
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
    hc_gguf_close(g);

    hc_model *m = hc_model_load(engine, out, NULL);
    ck_assert_msg(m == NULL, "a q6_k ffn_down_t was accepted");
    const char *e = hc_last_error();
    ck_assert_msg(strstr(e, name) && strstr(e, "q6_k") && !strchr(e, '\n'), "message: %s", e);
    printf("q6_k down_t: %s\n", e);
}
END_TEST

static Suite *golden_suite(void)
{
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("models");
    tcase_add_unchecked_fixture(tc, engine_up, engine_down);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, stories260K_f32);
    tcase_add_test(tc, eval_all_rows_are_each_tokens_logits);
    tcase_add_test(tc, relu2M_f32);
    tcase_add_test(tc, reglu1M_f32);
    tcase_add_test(tc, stories260K_tied_embeddings);
    tcase_add_test(tc, stories260K_f16);
    tcase_add_test(tc, relu2M_f16);
    tcase_add_test(tc, threads_agree);
    tcase_add_test(tc, weights_modes_agree);
    tcase_add_test(tc, batch_equals_sequential);
    tcase_add_test(tc, context_overflow_is_an_error);
    tcase_add_test(tc, q6_k_head_vs_f32_head);
    tcase_add_test(tc, q6_k_everywhere_vs_f32);
    tcase_add_test(tc, q6_k_down_t_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(golden_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
