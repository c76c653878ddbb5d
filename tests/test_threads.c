/*
 * Two contexts of one model, evaluated from two threads at once (issue 13,
 * item 4): each context holds its own streams, scratch and statistics, the
 * model only the read-only weights, so each thread must decode exactly the
 * token ids its context decodes alone.
 *
 * Every case first decodes both prompts one after the other, each in a
 * context of its own (the reference), then runs both decodes again at the
 * same time, contexts made inside the threads, several rounds.  The first
 * context also checks its predictor (--sparse-check, which does not change
 * the ids) in the PowerInfer cases, so the diagnostics run concurrently too.
 * Models: relu2M.powerinfer (predictor mode) and stories260K (dense), on the
 * CPU alone and split between the Vulkan plugin and the CPU (a budget of a
 * third of the file: some layers' attention and some hot neurons on the GPU);
 * the Vulkan cases say "skipped" where there is no Vulkan device.
 *
 * Check's assertions may not run in another thread: the threads only record
 * ids and errors, the main thread asserts.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hotcold/hotcold.h"
#include "test_util.h"

#define N_IDS 40
#define MAX_PROMPT 64
#define ROUNDS 3
#define GPU "vulkan"

static hc_engine *engine;

typedef struct job {
    const hc_model *m;
    int32_t prompt[MAX_PROMPT];
    int n_prompt;
    int sparse_check;
    int32_t ids[N_IDS];
    hc_context_run_stats rs;
    int rc;
    char err[1024];
} job;

/* Greedy decode of j->prompt in a context of its own; never asserts. */
static void *decode(void *arg)
{
    job *j = arg;
    hc_model_desc d;
    hc_model_describe(j->m, &d);
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = 128;
    cp.sparse_check = j->sparse_check;
    hc_context *c = hc_context_new((hc_model *)j->m, &cp);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    j->rc = -1;
    if (!c || !logits) {
        snprintf(j->err, sizeof j->err, "context: %s", hc_last_error());
        goto out;
    }
    if (hc_context_eval(c, j->prompt, j->n_prompt, logits))
        goto fail;
    for (int i = 0; i < N_IDS; i++) {
        j->ids[i] = hc_test_argmax(logits, d.n_vocab);
        if (i + 1 < N_IDS && hc_context_eval(c, &j->ids[i], 1, logits))
            goto fail;
    }
    hc_context_run_stats_get(c, &j->rs);
    j->rc = 0;
    goto out;
fail:
    snprintf(j->err, sizeof j->err, "eval: %s", hc_last_error());
out:
    free(logits);
    hc_context_free(c);
    return NULL;
}

static void make_job(job *j, const hc_model *m, const char *text, int sparse_check)
{
    memset(j, 0, sizeof *j);
    j->m = m;
    j->sparse_check = sparse_check;
    j->n_prompt = hc_model_tokenize(m, text, strlen(text), 1, j->prompt, MAX_PROMPT);
    ck_assert_msg(j->n_prompt > 1, "tokenize '%s': %s", text, hc_last_error());
}

static hc_model *load(const char *name, const char *device, int sparse, int budget_third)
{
    const char *path = hc_test_path(HC_MODELS_DIR, name);
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0, "%s is missing", path);
    hc_model_params mp = hc_model_default_params();
    mp.device = device;
    mp.sparse = sparse;
    mp.vram_budget = budget_third ? (double)st.st_size / 3.0 : -1.0;
    mp.gpu_index = HC_GPU_INDEX_DISABLE;
    mp.n_ctx = 128;
    hc_model *m = hc_model_load(engine, path, &mp);
    ck_assert_msg(m != NULL, "load %s on %s: %s", name, device, hc_last_error());
    return m;
}

static void two_threads(const char *name, const char *device, int sparse, int hybrid)
{
    if (strcmp(device, "cpu") != 0 && hc_engine_find_device(engine, device) < 0) {
        hc_test_skip("no %s device here: two threads on %s not run on it", device, name);
        return;
    }
    hc_model *m = load(name, device, sparse, hybrid);
    hc_plan_info plan;
    ck_assert_msg(!hybrid || hc_model_plan_info(m, &plan) == 0, "%s on %s: no placement", name,
                  device);
    const int check = sparse == HC_SPARSE_PREDICTOR;
    job ref[2], run[2];
    make_job(&ref[0], m, "Once upon a time", check);
    make_job(&ref[1], m, "The little dog ran to the park and", 0);
    for (int k = 0; k < 2; k++) {
        decode(&ref[k]);
        ck_assert_msg(ref[k].rc == 0, "%s, alone: %s", name, ref[k].err);
    }
    /* Split: with a predictor the GPU computes some hot neurons, the CPU
     * the rest. */
    if (hybrid && check)
        ck_assert_msg(ref[0].rs.gpu_rows > 0 && ref[0].rs.cpu_rows > 0,
                      "%s: FFN rows %lld on the GPU, %lld on the CPU: not split", name,
                      (long long)ref[0].rs.gpu_rows, (long long)ref[0].rs.cpu_rows);
    ck_assert_msg(memcmp(ref[0].ids, ref[1].ids, sizeof ref[0].ids) != 0,
                  "%s: both prompts decode the same ids; the test would not see a mix-up", name);
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t th[2];
        for (int k = 0; k < 2; k++) {
            make_job(&run[k], m, k == 0 ? "Once upon a time" : "The little dog ran to the park and",
                     ref[k].sparse_check);
            ck_assert_int_eq(pthread_create(&th[k], NULL, decode, &run[k]), 0);
        }
        for (int k = 0; k < 2; k++)
            ck_assert_int_eq(pthread_join(th[k], NULL), 0);
        for (int k = 0; k < 2; k++) {
            ck_assert_msg(run[k].rc == 0, "%s round %d thread %d: %s", name, round, k,
                          run[k].err);
            for (int i = 0; i < N_IDS; i++)
                ck_assert_msg(run[k].ids[i] == ref[k].ids[i],
                              "%s on %s, round %d, thread %d: id %d is %d, alone %d", name,
                              device, round, k, i, run[k].ids[i], ref[k].ids[i]);
        }
    }
    printf("%s on %s%s: two threads, %d rounds, %d ids each, equal to each context alone\n",
           name, device, hybrid ? " + cpu (hybrid)" : "", ROUNDS, N_IDS);
    hc_model_free(m);
}

START_TEST(cpu_relu2M_predictor)
{
    two_threads("relu2M.powerinfer.gguf", "cpu", HC_SPARSE_PREDICTOR, 0);
}
END_TEST

START_TEST(cpu_stories260K)
{
    two_threads("stories260K.gguf", "cpu", HC_SPARSE_AUTO, 0);
}
END_TEST

START_TEST(hybrid_relu2M_predictor)
{
    two_threads("relu2M.powerinfer.gguf", GPU, HC_SPARSE_PREDICTOR, 1);
}
END_TEST

START_TEST(hybrid_stories260K)
{
    two_threads("stories260K.gguf", GPU, HC_SPARSE_AUTO, 1);
}
END_TEST

int main(void)
{
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = HC_TEST_THREADS;
    engine = hc_engine_open(&ep);
    if (!engine) {
        hc_test_skip("no engine: %s", hc_last_error());
        return 77;
    }
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("two contexts");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cpu_relu2M_predictor);
    tcase_add_test(tc, cpu_stories260K);
    tcase_add_test(tc, hybrid_relu2M_predictor);
    tcase_add_test(tc, hybrid_stories260K);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    hc_engine_close(engine);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
