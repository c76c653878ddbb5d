/*
 * Sparse FFN modes against independent references.
 *
 * Oracle mode computes the gate of every neuron and then only the neurons
 * whose activation is non-zero, so for a ReLU model it must reproduce the
 * dense model: the golden float64 greedy ids, and the golden per-layer
 * fraction of non-zero activations (both from tests/data/golden, made by an
 * independent numpy reference).  For quantized weights, where no golden
 * exists, oracle must give the same greedy ids as dense on the same file.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "test_util.h"

#define MAX_IDS 512

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
}

static const char *model_path(const char *name)
{
    return hc_test_path(HC_MODELS_DIR, name);
}

static hc_model *load(const char *path, int sparse)
{
    hc_model_params mp = hc_model_default_params();
    mp.sparse = sparse;
    hc_model *m = hc_model_load(engine, path, &mp);
    ck_assert_msg(m != NULL, "%s: %s", path, hc_last_error());
    return m;
}

/* Feed `prompt`, then `n` teacher-forced steps of `follow` (or greedy when
 * follow is NULL); record our argmax at every step. */
static void decode(hc_model *m, hc_context *c, const int32_t *prompt, int n_prompt,
                   const int32_t *follow, int n, int32_t *out)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    ck_assert(logits != NULL);
    ck_assert_msg(hc_context_eval(c, prompt, n_prompt, logits) == 0, "%s", hc_last_error());
    for (int i = 0; i < n; i++) {
        out[i] = hc_test_argmax(logits, d.n_vocab);
        int32_t next = follow ? follow[i] : out[i];
        if (i + 1 < n)
            ck_assert_msg(hc_context_eval(c, &next, 1, logits) == 0, "%s", hc_last_error());
    }
    free(logits);
}

typedef struct golden {
    json_object *root;
    int32_t ids[MAX_IDS];
    int n_ids;
    double frac[64];
    int n_layers;
    int32_t prompt[MAX_IDS], prompt_greedy[MAX_IDS];
    int n_prompt, n_prompt_greedy;
} golden;

static void golden_load(golden *g, const char *model)
{
    char name[256];
    json_object *bos, *fp, *o;
    snprintf(name, sizeof name, "golden/%s.json", model);
    g->root = hc_test_load_json(hc_test_path(HC_TEST_DATA, name));
    ck_assert(g->root != NULL);
    ck_assert(json_object_object_get_ex(g->root, "from_bos", &bos));
    ck_assert(json_object_object_get_ex(bos, "greedy_ids", &o));
    g->n_ids = hc_test_json_ints(o, g->ids, MAX_IDS);
    ck_assert(json_object_object_get_ex(bos, "ffn_act_nonzero_fraction_per_layer", &o));
    g->n_layers = (int)json_object_array_length(o);
    for (int i = 0; i < g->n_layers && i < 64; i++)
        g->frac[i] = json_object_get_double(json_object_array_get_idx(o, (size_t)i));
    ck_assert(json_object_object_get_ex(g->root, "from_prompt", &fp));
    ck_assert(json_object_object_get_ex(fp, "prompt_ids", &o));
    g->n_prompt = hc_test_json_ints(o, g->prompt, MAX_IDS);
    ck_assert(json_object_object_get_ex(fp, "greedy_ids", &o));
    g->n_prompt_greedy = hc_test_json_ints(o, g->prompt_greedy, MAX_IDS);
}

/* Oracle mode on an F32 ReLU model: golden ids from BOS and from the
 * prompt, and the golden fraction of firing neurons per layer. */
static void oracle_matches_golden(const char *model)
{
    golden g;
    char file[256];
    int32_t ours[MAX_IDS], bos = 1;
    golden_load(&g, model);
    snprintf(file, sizeof file, "%s.gguf", model);
    hc_model *m = load(model_path(file), HC_SPARSE_ORACLE);
    hc_context *c = hc_context_new(m, NULL);
    ck_assert(c != NULL);

    /* Teacher-forced on the golden ids, so the sequence (and therefore the
     * activation statistics) is exactly the reference's. */
    decode(m, c, &bos, 1, g.ids, g.n_ids, ours);
    for (int i = 0; i < g.n_ids; i++)
        ck_assert_msg(ours[i] == g.ids[i], "%s oracle: step %d: %d, golden %d", model, i, ours[i],
                      g.ids[i]);
    /* The reference counts over the prompt token and every generated token
     * but the last, which is never fed back: the same steps we ran. */
    for (int il = 0; il < g.n_layers; il++) {
        hc_layer_sparse_stats ls;
        ck_assert_int_eq(hc_context_sparse_stats(c, il, &ls), 0);
        printf("%s oracle layer %d: %.4f of neurons computed, golden non-zero fraction %.4f\n",
               model, il, ls.computed_frac, g.frac[il]);
        /* The golden figure is rounded to 4 decimals. */
        ck_assert_msg(fabs(ls.computed_frac - g.frac[il]) < 1e-3,
                      "%s layer %d: computed %.4f, golden %.4f", model, il, ls.computed_frac,
                      g.frac[il]);
    }

    hc_context_reset(c);
    decode(m, c, g.prompt, g.n_prompt, NULL, g.n_prompt_greedy, ours);
    for (int i = 0; i < g.n_prompt_greedy; i++)
        ck_assert_msg(ours[i] == g.prompt_greedy[i], "%s oracle from prompt: step %d", model, i);
    hc_context_free(c);
    hc_model_free(m);
    json_object_put(g.root);
}

START_TEST(oracle_relu2M_golden)
{
    oracle_matches_golden("relu2M");
}
END_TEST

START_TEST(oracle_reglu1M_golden)
{
    oracle_matches_golden("reglu1M");
}
END_TEST

/* Quantized relu2M: oracle and dense agree on 120 greedy tokens. */
START_TEST(oracle_equals_dense_quantized)
{
    static const hc_type types[] = {HC_TYPE_F16, HC_TYPE_Q8_0, HC_TYPE_Q4_0};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "relu2M-%s.gguf", hc_type_name(types[k]));
        const char *path = hc_test_path(hc_test_tmpdir(), name);
        ck_assert_msg(hc_quantize_file(model_path("relu2M.gguf"), path, types[k], NULL, NULL) == 0,
                      "%s", hc_last_error());
        int32_t dense[120], oracle[120], bos = 1;
        hc_model *m = load(path, HC_SPARSE_OFF);
        hc_context *c = hc_context_new(m, NULL);
        decode(m, c, &bos, 1, NULL, 120, dense);
        hc_context_free(c);
        hc_model_free(m);
        m = load(path, HC_SPARSE_ORACLE);
        c = hc_context_new(m, NULL);
        decode(m, c, &bos, 1, NULL, 120, oracle);
        hc_context_free(c);
        hc_model_free(m);
        for (int i = 0; i < 120; i++)
            ck_assert_msg(dense[i] == oracle[i], "%s: oracle differs from dense at step %d",
                          hc_type_name(types[k]), i);
        printf("relu2M %s: oracle == dense over 120 greedy tokens\n", hc_type_name(types[k]));
    }
}
END_TEST

/* A batched prompt in oracle mode takes the union of the batch's rows and
 * must give the logits of feeding the tokens one by one. */
START_TEST(oracle_batch_equals_sequential)
{
    golden g;
    golden_load(&g, "relu2M");
    hc_model *m = load(model_path("relu2M.gguf"), HC_SPARSE_ORACLE);
    hc_context_params cp = hc_context_default_params();
    cp.n_batch = 4;
    hc_context *cb = hc_context_new(m, &cp), *cs = hc_context_new(m, NULL);
    ck_assert(cb && cs);
    float lb[4096], ls[4096];
    ck_assert_int_eq(hc_context_eval(cb, g.prompt, g.n_prompt, lb), 0);
    for (int i = 0; i < g.n_prompt; i++)
        ck_assert_int_eq(hc_context_eval(cs, &g.prompt[i], 1, ls), 0);
    double max_diff = 0;
    for (int i = 0; i < 4096; i++)
        max_diff = fmax(max_diff, fabs((double)lb[i] - ls[i]));
    ck_assert_msg(max_diff < 1e-3, "batched vs sequential oracle logits differ by %g", max_diff);
    hc_context_free(cb);
    hc_context_free(cs);
    hc_model_free(m);
    json_object_put(g.root);
}
END_TEST

START_TEST(mode_errors)
{
    hc_model_params mp = hc_model_default_params();
    mp.sparse = HC_SPARSE_ORACLE;
    ck_assert(hc_model_load(engine, model_path("stories260K.gguf"), &mp) == NULL);
    ck_assert_msg(strstr(hc_last_error(), "ReLU") != NULL, "%s", hc_last_error());
    mp.sparse = HC_SPARSE_PREDICTOR;
    ck_assert(hc_model_load(engine, model_path("relu2M.gguf"), &mp) == NULL);
    ck_assert_msg(strstr(hc_last_error(), "predictor") != NULL, "%s", hc_last_error());
    /* AUTO on a plain GGUF is dense. */
    hc_model *m = load(model_path("relu2M.gguf"), HC_SPARSE_AUTO);
    hc_model_desc d;
    hc_model_describe(m, &d);
    ck_assert_int_eq(d.sparse, HC_SPARSE_OFF);
    ck_assert_int_eq(d.is_pwri, 0);
    hc_model_free(m);
}
END_TEST

/* Threshold precedence: parameter > $LLAMA_SPARSE_PRED_THRESHOLD > file > 0. */
START_TEST(threshold_precedence)
{
    hc_model_desc d;
    hc_model *m;
    unsetenv("LLAMA_SPARSE_PRED_THRESHOLD");
    m = load(model_path("relu2M.gguf"), HC_SPARSE_ORACLE);
    hc_model_describe(m, &d);
    ck_assert(d.sparse_threshold == 0.0f);
    hc_model_free(m);

    setenv("LLAMA_SPARSE_PRED_THRESHOLD", "0.75", 1);
    m = load(model_path("relu2M.gguf"), HC_SPARSE_ORACLE);
    hc_model_describe(m, &d);
    ck_assert(d.sparse_threshold == 0.75f);
    hc_model_free(m);

    hc_model_params mp = hc_model_default_params();
    mp.sparse_threshold = -1.5f;
    m = hc_model_load(engine, model_path("relu2M.gguf"), &mp);
    ck_assert(m != NULL);
    hc_model_describe(m, &d);
    ck_assert(d.sparse_threshold == -1.5f);
    hc_model_free(m);

    setenv("LLAMA_SPARSE_PRED_THRESHOLD", "half", 1);
    ck_assert(hc_model_load(engine, model_path("relu2M.gguf"), NULL) == NULL);
    ck_assert_msg(strstr(hc_last_error(), "LLAMA_SPARSE_PRED_THRESHOLD") != NULL, "%s",
                  hc_last_error());
    unsetenv("LLAMA_SPARSE_PRED_THRESHOLD");
}
END_TEST

static Suite *sparse_suite(void)
{
    Suite *s = suite_create("sparse");
    TCase *tc = tcase_create("modes");
    tcase_add_unchecked_fixture(tc, engine_up, engine_down);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, oracle_relu2M_golden);
    tcase_add_test(tc, oracle_reglu1M_golden);
    tcase_add_test(tc, oracle_equals_dense_quantized);
    tcase_add_test(tc, oracle_batch_equals_sequential);
    tcase_add_test(tc, mode_errors);
    tcase_add_test(tc, threshold_precedence);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sparse_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
